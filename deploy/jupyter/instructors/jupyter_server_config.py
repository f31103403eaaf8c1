"""Jupyter Server settings for instructors' servers only.

nbgrader's formgrader opens in JupyterLab as a frame of the instructor's own server. Since
JupyterHub 4.1, user servers send ``Content-Security-Policy: frame-ancestors 'none'``, which
forbids any framing and leaves that panel blank. Instructors' servers send ``'self'`` instead:
a page may frame them only when it comes from the same origin (scheme, host and port).

The trade-off: without per-user subdomains, every server on the hub shares that origin, so a
page served by another user's server could, in principle, frame the instructor's server. The
students' servers keep JupyterHub's ``'none'``. To give up the panel and keep ``'none'`` here
too, delete this file: the formgrader then still works in its own browser tab at
``/user/<instructor>/formgrader``. With ``JupyterHub.subdomain_host`` set (each user on their
own subdomain), ``'self'`` covers only the instructor's own pages and the trade-off vanishes.
"""

c = get_config()  # noqa: F821  (injected by traitlets when Jupyter Server loads this file)

c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
