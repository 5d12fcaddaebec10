"""Trigger payloads: the ``gmail`` preset, channel normalisation, input mapping and queue lanes."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from agentpack.io import jsonio

from ..dotpath import MISSING, resolve

_ADDRESS = re.compile(r"<([^<>@\s]+@[^<>\s]+)>|([^\s<>\"']+@[^\s<>\"',;]+)")


def email_address(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    match = _ADDRESS.search(text)
    return (match.group(1) or match.group(2)).lower() if match else None


def gmail_enrich(payload: Any) -> Any:
    """Gmail events: a list of messages (``messages[0].id/.from``) or a Pub/Sub push (``message.data``).

    Adds ``message_id``, ``thread_id``, ``sender_email`` and ``contact_id`` (the sender's address,
    lowercased, unless the payload already has one) at the top level.
    """
    if not isinstance(payload, dict):
        return payload
    out = dict(payload)
    push = out.get("message")
    if isinstance(push, dict) and isinstance(push.get("data"), str):
        try:
            decoded = jsonio.loads(base64.b64decode(push["data"]))
        except ValueError:  # not base64, not UTF-8 or not strict JSON (JsonError is a ValueError)
            decoded = None
        if isinstance(decoded, dict):
            out.setdefault("email_address", decoded.get("emailAddress"))
            out.setdefault("history_id", decoded.get("historyId"))
        out.setdefault("message_id", push.get("messageId") or push.get("message_id"))
    first = resolve(out, "messages[0]")
    if isinstance(first, dict):
        out.setdefault("message_id", first.get("id"))
        out.setdefault("thread_id", first.get("threadId") or first.get("thread_id"))
        sender = email_address(first.get("from"))
        if sender:
            out.setdefault("sender_email", sender)
    sender = out.get("sender_email") or out.get("email_address")
    if sender and "contact_id" not in out:
        out["contact_id"] = str(sender).lower()
    return out


def normalise_channel(channel_name: str, raw: Any) -> dict[str, Any]:
    """The portable channel payload: ``sender_id``, ``message_text``, ``channel_name`` (and ``raw``).

    Understands an already-normalised body, Slack events (``event.user/text``), Telegram updates
    (``message.from.id/text``) and generic ``from``/``text`` or ``sender``/``body`` pairs.
    Raises ``ValueError`` when no sender or text can be found.
    """
    if not isinstance(raw, dict):
        raise ValueError("a channel message must be a JSON object")
    candidates = [
        ("sender_id", "message_text"),
        ("event.user", "event.text"),
        ("message.from.id", "message.text"),
        ("user", "text"),
        ("from", "text"),
        ("sender", "body"),
        ("from", "body"),
        ("sender", "text"),
    ]
    for sender_path, text_path in candidates:
        sender, text = resolve(raw, sender_path), resolve(raw, text_path)
        if sender is not MISSING and text is not MISSING and sender is not None and isinstance(text, str):
            if isinstance(sender, dict):
                sender = sender.get("id", sender.get("username"))
            return {"sender_id": str(sender), "message_text": text, "channel_name": channel_name, "raw": raw}
    raise ValueError("cannot find the sender and the text in the message (expected sender_id and message_text)")


def map_inputs(payload: Any, mapping: dict[str, str] | None) -> tuple[dict[str, Any], list[str]]:
    """Process inputs from ``payload`` through ``payload_mapping`` (raw payload when there is none)."""
    if not mapping:
        return (dict(payload) if isinstance(payload, dict) else {"payload": payload}), []
    inputs, warnings = {}, []
    for name, path in mapping.items():
        value = resolve(payload, path)
        if value is MISSING:
            warnings.append(f"payload_mapping: '{path}' is not in the payload; input '{name}' is left unset")
        else:
            inputs[name] = value
    return inputs, warnings


def lane_for(trigger: str, mode: str, key_path: str | None, payload: Any, session: str) -> tuple[str | None, list[str]]:
    """The queue lane of an invocation, and a warning when ``serial_per_key`` falls back to ``serial``."""
    if session == "main":
        return "session:main", []
    if mode == "serial":
        return f"serial:{trigger}", []
    if mode == "serial_per_key":
        key = resolve(payload, key_path) if key_path else MISSING
        if key is MISSING or key is None:
            return f"serial:{trigger}", [
                f"concurrency_key '{key_path}' is not in the payload; this invocation falls back to serial"
            ]
        return f"key:{trigger}:{json.dumps(key, sort_keys=True, default=str)}", []
    return None, []
