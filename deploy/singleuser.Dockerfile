# The user image of the Kubernetes deployment (deploy/z2jh-values.yaml, singleuser.image): every
# student's and instructor's server runs in it. Build it from the repository's root and push it
# to your registry (deploy/README.md, "Kubernetes"):
#
#   docker build -f deploy/singleuser.Dockerfile -t registry.example.edu/attention-step-by-step/singleuser:2026-1 .
#
# Never copy solutions/ or autograder/ into it: every student runs this image. Instructors
# clone the course into their own home volume instead.

# docker-stacks' minimal image: its start script (start.sh, the entry point) starts as root, gives
# the user `jovyan` the uid that the hub chose for this user (NB_UID), runs the
# before-notebook.d hooks as root, then runs the server as jovyan. Its Python (3.11) is the
# course's. For a reproducible image, pin the tag you tested by its digest (name@sha256:...).
FROM quay.io/jupyter/base-notebook:python-3.11

# The server, JupyterLab, nbgrader and the course's numpy, torch and matplotlib, exactly pinned.
COPY deploy/requirements-singleuser.txt /tmp/requirements-singleuser.txt
RUN pip install --no-cache-dir -r /tmp/requirements-singleuser.txt

# The course package (attention_course), which the chapters import.
COPY --chown=${NB_UID}:${NB_GID} pyproject.toml /tmp/course/
COPY --chown=${NB_UID}:${NB_GID} attention_course /tmp/course/attention_course
RUN pip install --no-cache-dir --no-deps /tmp/course && rm -rf /tmp/course

# nbgrader's exchange gets mode 1777 at every start, as root, before the switch to the user.
# Sourced by start.sh, so that a failure (printed in the pod's log) stops the start.
USER root
COPY deploy/exchange-permissions.sh /usr/local/bin/attention-exchange-permissions
RUN chmod 755 /usr/local/bin/attention-exchange-permissions \
    && echo '/usr/local/bin/attention-exchange-permissions || exit 1' \
        > /usr/local/bin/before-notebook.d/50-attention-exchange.sh
USER ${NB_UID}
