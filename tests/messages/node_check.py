"""Runs one of this folder's node checkers on a JSON payload: the payload
goes to a temporary file whose path is the checker's argument, and the
checker's exit status is the verdict (its output is echoed to stderr)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = os.environ.get("NODE", "node")


def run_node_check(test, script, payload):
    """Runs HERE/script on payload and fails test unless it exits 0.
    Returns the finished process."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(payload, f)
        path = f.name
    try:
        p = subprocess.run([NODE, os.path.join(HERE, script), path],
                           capture_output=True, text=True, cwd=HERE)
    finally:
        os.unlink(path)
    sys.stderr.write(p.stdout[-6000:] + p.stderr[-3000:])
    test.assertEqual(p.returncode, 0, p.stdout[-6000:] + p.stderr[-3000:])
    return p
