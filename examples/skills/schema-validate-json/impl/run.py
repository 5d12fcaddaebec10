"""schema.validate_json: validate an instance against a JSON Schema, offline and deterministically."""

import json
import sys

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable


def pointer(parts):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts) if parts else ""


def log(event, **fields):
    sys.stderr.write(json.dumps({"level": "info", "event": event, **fields}, sort_keys=True) + "\n")


def main():
    request = json.load(sys.stdin)
    schema, instance = request["schema"], request["instance"]
    limit = request.get("maxErrors", 100)
    cls = validators.validator_for(schema, default=Draft202012Validator)
    dialect = cls.META_SCHEMA.get("$id", "")
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        errors = [
            {
                "pointer": pointer(exc.absolute_path),
                "keyword": "schema",
                "message": f"the schema is not valid: {exc.message}",
            }
        ]
        result = {"valid": False, "schemaValid": False, "dialect": dialect, "errors": errors, "errorCount": 1}
        log("schema_invalid")
        json.dump(result, sys.stdout, sort_keys=True)
        return
    validator = cls(schema, registry=Registry(), format_checker=cls.FORMAT_CHECKER)
    try:
        found = [
            {
                "pointer": pointer(e.absolute_path),
                "schemaPointer": pointer(e.absolute_schema_path),
                "keyword": str(e.validator),
                "message": e.message,
            }
            for e in validator.iter_errors(instance)
        ]
    except Unresolvable as exc:
        found = [
            {
                "pointer": "",
                "keyword": "$ref",
                "message": f"unresolvable reference (remote schemas are never fetched): {exc}",
            }
        ]
    found.sort(key=lambda e: (e["pointer"], e["keyword"], e.get("schemaPointer", ""), e["message"]))
    result = {
        "valid": not found,
        "schemaValid": True,
        "dialect": dialect,
        "errors": found[:limit],
        "errorCount": len(found),
    }
    log("validated", errors=len(found))
    json.dump(result, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
