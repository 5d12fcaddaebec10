"""__SKILL_ID__: JSON on stdin, JSON on stdout, JSONL logs on stderr. Replace the body with the skill's logic."""

import json
import sys


def main():
    request = json.load(sys.stdin)
    text = request["text"]
    sys.stderr.write(json.dumps({"level": "info", "event": "received", "length": len(text)}) + "\n")
    json.dump({"text": text, "length": len(text)}, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
