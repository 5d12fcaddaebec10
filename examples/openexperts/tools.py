"""In-memory helpdesk and CRM for the acme-support example (bound through bindings.yaml).

Set ACME_LEDGER to a file path to get one JSON line per side effect (tests read it).
"""

from __future__ import annotations

import itertools
import json
import os

TICKETS = {
    "T-100": {
        "id": "T-100",
        "subject": "Cannot log in",
        "body": "Login says my account is locked.",
        "customer_id": "C-1",
        "status": "new",
    },
    "T-101": {
        "id": "T-101",
        "subject": "Export fails",
        "body": "Exporting 3 GB of data fails at 80%.",
        "customer_id": "C-2",
        "status": "new",
    },
}
CUSTOMERS = {
    "C-1": {"id": "C-1", "name": "Globex", "plan": "enterprise", "health": "green"},
    "C-2": {"id": "C-2", "name": "Initech", "plan": "team", "health": "amber"},
}
_ids = itertools.count(1)


def _ledger(entry: dict) -> None:
    path = os.environ.get("ACME_LEDGER")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")


class Helpdesk:
    def get_ticket(self, ticket_id: str) -> dict:
        if ticket_id not in TICKETS:
            return {"id": ticket_id, "subject": "(unknown)", "body": "", "customer_id": ""}
        return {k: v for k, v in TICKETS[ticket_id].items() if k != "status"}

    def list_open(self) -> list:
        return [t for t in TICKETS.values() if t["status"] != "solved"]

    def add_internal_note(self, ticket_id: str, body: str) -> dict:
        note_id = f"N-{next(_ids)}"
        _ledger({"op": "helpdesk.add_internal_note", "ticket_id": ticket_id, "note_id": note_id})
        return {"note_id": note_id}

    def set_status(self, ticket_id: str, status: str) -> dict:
        if ticket_id in TICKETS:
            TICKETS[ticket_id]["status"] = status
        _ledger({"op": "helpdesk.set_status", "ticket_id": ticket_id, "status": status})
        return {"ok": True}

    def reply(self, ticket_id: str, body: str) -> dict:  # manual tier: the runtime never calls it
        raise RuntimeError("replies are sent by humans")


class Crm:
    def get_customer(self, customer_id: str) -> dict:
        return CUSTOMERS.get(customer_id, {"id": customer_id, "name": "unknown", "plan": "free", "health": "n/a"})
