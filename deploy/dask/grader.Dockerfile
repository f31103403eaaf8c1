# The image of a grading cluster (deploy/dask/README.md): the Dask scheduler, the workers that grade in
# the sandbox, and the grading Job that coordinates. Build it from the repository's root, from the
# commit you grade with, and push it to a registry that only the grading namespace can pull from:
#
#   docker build -f deploy/dask/grader.Dockerfile -t registry.example.edu/attention-step-by-step/grader:2026-1 .
#
# It holds the instructor notebooks and the reference modules (the hidden tests): never use it for a
# student's server (that is deploy/singleuser.Dockerfile). A worker grades only with the grader and
# assignment its coordinator has (engine.py compares their digests), so rebuild and roll out the image
# whenever the course changes.
FROM python:3.11-slim-bookworm

# The sandbox's tools (autograder/grading/jail.py): unshare, setpriv, prlimit, mount (util-linux, mount),
# chroot (coreutils); openssl for `python -m autograder dask-certs`.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends util-linux mount openssl \
    && rm -rf /var/lib/apt/lists/*

# The course's pinned requirements (dask and distributed among them); torch as its CPU build, as in CI:
# the sandbox has no device nodes, so the student's code runs on the CPU anyway.
ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt

# What grading reads: the grader, the instructor and student notebooks, the reference modules, the course
# package (installed in place, as scripts/setup.sh does, so that the sandbox mounts this very folder).
WORKDIR /srv/course
COPY pyproject.toml /srv/course/pyproject.toml
COPY attention_course /srv/course/attention_course
COPY autograder /srv/course/autograder
COPY solutions /srv/course/solutions
COPY chapters /srv/course/chapters
RUN pip install --no-cache-dir --no-deps -e /srv/course
ENV PYTHONPATH=/srv/course
