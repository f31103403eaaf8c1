"""The grading cluster's deployment (deploy/dask/), without a cluster: do the manifests run what engine.py runs?

The Dask Kubernetes operator's DaskCluster (scheduler and workers), the network policies and the grading Job
are parsed and checked against autograder/grading/engine.py: one image everywhere, the TLS secret mounted
where the commands read it, the scheduler's and workers' options those local_cluster uses, encryption
required, no plain tcp, workers privileged (the sandbox) and nothing else, and only the workers and the
grading Job admitted to the scheduler. The image's Dockerfile installs the pinned requirements, and the
folders it copies are enough for a worker to pass the coordinator's digest check. What only a cluster can
show (the operator's reconciliation, the policies enforced by the network plugin) is deploy/dask/README.md's.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from autograder import course
from autograder.grading import engine

DASK = course.ROOT / "deploy" / "dask"
TLS = Path("/etc/dask-tls")


def _documents() -> dict[str, dict]:
    found = {}
    for name in ("cluster.yaml", "grade-job.yaml"):
        for document in yaml.safe_load_all((DASK / name).read_text()):
            found[f"{document['kind']}/{document['metadata']['name']}"] = document
    return found


def _address(cluster: dict) -> str:
    """The scheduler's address inside the cluster: the operator's service <name>-scheduler, its port."""
    port = cluster["spec"]["scheduler"]["service"]["ports"][0]["port"]
    return f"tls://{cluster['metadata']['name']}-scheduler.{cluster['metadata']['namespace']}.svc.cluster.local:{port}"


def _pods(documents: dict) -> dict[str, dict]:
    cluster = next(d for d in documents.values() if d["kind"] == "DaskCluster")
    job = next(d for d in documents.values() if d["kind"] == "Job")
    return {"scheduler": cluster["spec"]["scheduler"]["spec"], "worker": cluster["spec"]["worker"]["spec"],
            "client": job["spec"]["template"]["spec"]}  # fmt: skip


def _line(container: dict) -> list[str]:
    return [str(a) for a in container.get("command", []) + container.get("args", [])]


def _contains(line: list[str], part: list[str]) -> bool:
    return any(line[i : i + len(part)] == part for i in range(len(line) - len(part) + 1))


def test_the_cluster_runs_what_local_cluster_runs():
    documents = _documents()
    cluster = documents["DaskCluster/grading"]
    assert cluster["apiVersion"] == "kubernetes.dask.org/v1"
    pods, address = _pods(documents), _address(cluster)
    scheduler, worker, client = (_line(pods[p]["containers"][0]) for p in ("scheduler", "worker", "client"))
    assert scheduler[:4] == ["python", "-m", "dask", "scheduler"]
    assert _contains(scheduler, engine.scheduler_arguments(TLS)), scheduler
    assert _contains(scheduler, ["--port", address.rsplit(":", 1)[1]])
    assert worker[:5] == ["python", "-m", "dask", "worker", address]
    assert _contains(worker, engine.worker_arguments(TLS)), worker
    assert client[:4] == ["python", "-m", "autograder", "grade"]
    assert _contains(client, ["--scheduler", address]) and _contains(client, ["--tls", str(TLS)]), client
    images = {pod["containers"][0]["image"] for pod in pods.values()}
    assert len(images) == 1, f"one image for the scheduler, the workers and the coordinator: {images}"


def test_every_party_mounts_its_certificate_and_requires_encryption():
    for party, pod in _pods(_documents()).items():
        container = pod["containers"][0]
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(TLS))
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        assert mount.get("readOnly") and volume["secret"]["defaultMode"] & 0o077 in (0, 0o040), (party, volume)
        env = {e["name"]: e["value"] for e in container.get("env", [])}
        assert {k: env.get(k) for k in engine.ENVIRONMENT} == engine.ENVIRONMENT, party
        files = _secret_files(volume["secret"]["secretName"])
        assert {path.name for path in engine.tls_files(TLS, party)} <= files, (party, files)


def _secret_files(secret: str) -> set[str]:
    """The files the manifests' comments put in ``secret`` (kubectl create secret generic ... --from-file=DIR/x)."""
    lines = [line.strip().lstrip("#").strip().rstrip("\\").strip()
             for name in ("cluster.yaml", "grade-job.yaml")
             for line in (DASK / name).read_text().splitlines()]  # fmt: skip
    match = re.search(rf"create secret generic {secret}((?:\s+--from-file=DIR/\S+)+)", " ".join(lines))
    return set(re.findall(r"DIR/(\S+)", match.group(1))) if match else set()


def _no_plain_tcp(texts: list[str]) -> list[str]:
    return [text for text in texts if re.search(r"\btcp://", text)]


def test_no_party_speaks_plain_tcp():
    texts = [(DASK / name).read_text() for name in ("cluster.yaml", "grade-job.yaml", "README.md")]
    assert not _no_plain_tcp(texts)
    assert _no_plain_tcp(["args: [dask, worker, tcp://grading-scheduler:8786]"])  # negative control


def test_only_the_workers_run_privileged():
    pods = _pods(_documents())
    assert pods["worker"]["containers"][0]["securityContext"] == {"privileged": True, "runAsUser": 0}
    for party in ("scheduler", "client"):
        context = pods[party]["containers"][0]["securityContext"]
        assert not context.get("privileged") and context["allowPrivilegeEscalation"] is False, party
        assert pods[party]["securityContext"]["runAsNonRoot"] is True, party


def _admitted(policy: dict) -> list[dict]:
    """The label sets a NetworkPolicy admits, from its own namespace only; anything wider is an error."""
    admitted = []
    for rule in policy["spec"]["ingress"]:
        for peer in rule["from"]:
            assert set(peer) == {"podSelector"}, f"{policy['metadata']['name']} admits more than pods: {peer}"
            admitted.append(peer["podSelector"]["matchLabels"])
    return admitted


def test_only_the_workers_and_the_grading_job_reach_the_scheduler():
    documents = _documents()
    policy = documents["NetworkPolicy/grading-scheduler"]
    scheduler = {"dask.org/cluster-name": "grading", "dask.org/component": "scheduler"}
    worker = {**scheduler, "dask.org/component": "worker"}
    job = documents["Job/grade-03"]["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"] == scheduler
    assert policy["metadata"]["namespace"] == documents["DaskCluster/grading"]["metadata"]["namespace"]
    assert documents["DaskCluster/grading"]["spec"]["scheduler"]["service"]["selector"] == scheduler
    assert _admitted(policy) == [worker, job]
    assert _admitted(documents["NetworkPolicy/grading-workers"]) == [scheduler, worker]
    wider = copy.deepcopy(policy)  # negative control: a policy that admits another namespace is refused
    wider["spec"]["ingress"][0]["from"].append({"namespaceSelector": {}})
    try:
        _admitted(wider)
    except AssertionError:
        pass
    else:
        raise AssertionError("a namespaceSelector went unnoticed")


def test_the_image_installs_the_pins_and_holds_what_a_worker_needs(tmp_path):
    """The Dockerfile installs requirements.txt (dask and distributed pinned there); its COPY lines, replayed
    into a folder, give a course whose grader and assignment digests are this repository's, so a worker built
    from it passes the coordinator's check (engine.grade_task)."""
    dockerfile = (DASK / "grader.Dockerfile").read_text()
    assert "COPY requirements.txt /tmp/requirements.txt" in dockerfile
    assert re.search(r"pip install --no-cache-dir -r /tmp/requirements\.txt", dockerfile)
    pins = (course.ROOT / "requirements.txt").read_text()
    assert re.search(r"^distributed==\S+$", pins, re.M) and re.search(r"^dask==\S+$", pins, re.M)
    root = tmp_path / "srv-course"
    copies = re.findall(r"^COPY (\S+) /srv/course/(\S+)$", dockerfile, re.M)
    assert copies, "the Dockerfile copies nothing of the course"
    for source, target in copies:
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        copy_tree = shutil.copytree if (course.ROOT / source).is_dir() else shutil.copy
        copy_tree(course.ROOT / source, root / target)
    probe = "from autograder.grading import engine; print(engine._expected('03_attention_steps'))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=root, env={"PYTHONPATH": str(root)}, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(engine._expected("03_attention_steps"))
