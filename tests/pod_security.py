"""Kubernetes' Pod Security Standards as a check of a pod's spec, for tests/test_z2jh.py.

:func:`pod_security_violations` names the rules of level "baseline" or "restricted" that a pod breaks,
for the fields a KubeSpawner pod can carry: a partial re-statement of
https://kubernetes.io/docs/concepts/security/pod-security-standards/, not the admission controller
itself (which only a cluster runs).
"""

from __future__ import annotations

BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def pod_security_violations(pod: dict, level: str) -> set[str]:
    """The rules of Kubernetes' Pod Security Standards (level "baseline" or "restricted") that
    a pod breaks, for the fields a KubeSpawner pod can carry. A partial re-statement of
    https://kubernetes.io/docs/concepts/security/pod-security-standards/, not the admission
    controller itself."""
    spec = pod["spec"]
    pod_context = spec.get("securityContext") or {}
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    broken = set()
    if any(spec.get(key) for key in ("hostNetwork", "hostPID", "hostIPC")):
        broken.add("host namespaces")
    if any("hostPath" in volume for volume in spec.get("volumes", [])):
        broken.add("hostPath volumes")
    for container in containers:
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            broken.add("privileged containers")
        if set(context.get("capabilities", {}).get("add", [])) - BASELINE_CAPABILITIES:
            broken.add("capabilities")
        if any(port.get("hostPort") for port in container.get("ports", [])):
            broken.add("host ports")
    if level == "baseline":
        return broken
    if any(not set(volume) - {"name"} <= RESTRICTED_VOLUMES for volume in spec.get("volumes", [])):
        broken.add("volume types")
    for container in containers:
        context = container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            broken.add("allowPrivilegeEscalation")
        if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
            broken.add("runAsNonRoot")
        if context.get("runAsUser", pod_context.get("runAsUser")) == 0:
            broken.add("runAsUser")
        seccomp = context.get("seccompProfile", pod_context.get("seccompProfile")) or {}
        if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
            broken.add("seccompProfile")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in capabilities.get("drop", []) or set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            broken.add("capabilities")
    return broken
