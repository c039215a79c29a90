"""One Skill Factory rollout, run as a Ray job: the entrypoint of the job's working_dir.

The driver ships this file beside job.json and the rollout's files. It runs the rollout's
program as the driver would run it locally: argv executed directly (no shell), in its own
process group, stdin from the shipped input or /dev/null, the environment laid over the
node's, the group killed once the program is done. The job's log is Ray's and the program's
output mixed, so what the driver needs (exit code, stdout, stderr, each bounded as locally)
is printed as one line after a marker, base64 inside JSON. When Ray stops the job (the
rollout's timeout, or Ctrl-C on the driver) the group is killed and what was printed so far
is reported the same way.
"""

import base64
import json
import os
import signal
import subprocess
import sys
import threading

here = os.path.dirname(os.path.abspath(__file__))
root = os.getcwd()
with open(os.path.join(here, "job.json"), encoding="utf-8") as f:
    spec = json.load(f)


def placed(text):
    return text.replace(spec["root_token"], root)


class Stream:
    """The head and the tail of one output stream, as the driver keeps them."""

    def __init__(self, head_limit, tail_limit):
        self.head = bytearray()
        self.tail = bytearray()
        self.head_limit = head_limit
        self.tail_limit = tail_limit
        self.total = 0

    def push(self, chunk):
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit > 0:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.tail_limit)]

    def report(self):
        return {
            "head": base64.b64encode(bytes(self.head)).decode(),
            "tail": base64.b64encode(bytes(self.tail)).decode(),
            "total": self.total,
        }


def drain(pipe, stream):
    for chunk in iter(lambda: pipe.read1(65536), b""):
        stream.push(chunk)


def report(**fields):
    sys.stdout.flush()
    sys.stdout.write("\n" + spec["marker"] + json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    env = dict(os.environ)
    env.update({key: placed(value) for key, value in spec["env"].items()})
    argv = [placed(arg) for arg in spec["argv"]]
    cwd = os.path.join(root, spec["cwd"]) if spec["cwd"] else root
    stdin = subprocess.DEVNULL
    if spec["stdin"]:
        stdin = open(os.path.join(here, "stdin"), "rb")
    try:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        # The errno, so the driver words it as it words a local launch failure.
        report(launch_error={"errno": error.errno, "message": error.strerror or str(error)})
        return 127
    out = Stream(spec["stdout_head"], spec["tail"])
    err = Stream(0, spec["tail"])
    readers = [
        threading.Thread(target=drain, args=(child.stdout, out), daemon=True),
        threading.Thread(target=drain, args=(child.stderr, err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    def stop(signum, frame):
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # The driver stops the job at the rollout's timeout; this is the limit should it not (it
    # was killed, or lost the dashboard).
    try:
        code = child.wait(timeout=spec["deadline"])
    except subprocess.TimeoutExpired:
        stop(None, None)
        code = child.wait()
    # What the program left running dies with it, and its end of the pipes with it.
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        pass
    for reader in readers:
        reader.join(timeout=5)
    report(code=code, stdout=out.report(), stderr=err.report())
    # The job's own status follows the program's (Ray's dashboard then shows it failed).
    return code if 0 <= code < 256 else 128 + (-code % 128)


sys.exit(main())
