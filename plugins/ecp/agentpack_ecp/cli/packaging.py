"""``agentpack ecp package``, ``verify``, ``sign`` and ``keygen``: shipping a pack.

Implementations are imported when a command runs (``agentpack ecp --help`` imports none of them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentpack.cli.clikit import envelope, output_option

from .output import PACK, emit, must_exist


def _findings_text(findings: list[dict[str, Any]]) -> str:
    return "\n".join(f"{f['severity']}: {f['code']} {f.get('file', '')}: {f['message']}" for f in findings)


@click.command()
@click.argument("pack", type=PACK)
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The ZIP file to write.",
)
@click.option("--exclude", "excludes", multiple=True, metavar="GLOB", help="Also leave out these (gitignore) globs.")
@click.option("--include-logs", is_flag=True, help="Package expert/logs/ too.")
@click.option("--include-backups", is_flag=True, help="Package index backups (.backup/) too.")
@click.option(
    "--allow-secrets",
    is_flag=True,
    help="Package a pack with security.contains_secrets: true (only for an encrypted channel).",
)
@click.option(
    "--sign-key",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Sign the package with this ed25519 private key.",
)
@output_option(choices=("text", "json"), command="ecp package", flags=("--format",))
def package(
    pack: Path,
    out: Path,
    excludes: tuple[str, ...],
    include_logs: bool,
    include_backups: bool,
    allow_secrets: bool,
    sign_key: Path | None,
    output: str,
) -> None:
    """Package PACK as a reproducible ZIP with expert/package.json (spec 6.5).

    Logs, backups, staging and lifecycle state are left out, and so is anything under
    expert/ that EXPERT.yaml does not declare (listed as left_out). Set
    SOURCE_DATE_EPOCH to fix the timestamps; otherwise the newest file
    modification time is used, so an unchanged tree gives the same bytes.

    \b
    Examples:
      agentpack ecp package my-expert -o my-expert.zip
      SOURCE_DATE_EPOCH=1767225600 agentpack ecp package my-expert -o dist/my-expert.zip --sign-key release.key
    """
    from ..packaging.package import package_pack
    from ..packaging.sign import sign_package
    from ..packaging.signing import load_private_key

    if sign_key:
        load_private_key(sign_key)  # a key that cannot sign is an error before anything is written
    summary = package_pack(
        pack,
        out,
        extra_excludes=excludes,
        include_logs=include_logs,
        include_backups=include_backups,
        allow_secrets=allow_secrets,
    )
    if sign_key:
        summary["signature"] = sign_package(out, sign_key)
    emit(
        envelope("ecp package", True, **summary),
        output,
        f"{summary['package']}: {summary['files']} files, package_sha256 {summary['package_sha256']}",
    )


@click.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option(
    "--key",
    "keys",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A trusted ed25519 public key (PEM); the package must carry a valid signature by one of them.",
)
@click.option("--require-signature", is_flag=True, help="Fail when the package has no valid signature.")
@click.option("--max-bytes", type=click.IntRange(min=1), help="Largest total uncompressed size accepted.")
@click.option("--max-entries", type=click.IntRange(min=1), help="Most archive entries accepted.")
@click.option("--max-ratio", type=click.FloatRange(min=1), help="Largest compression ratio accepted per entry.")
@output_option(choices=("text", "json"), command="ecp verify")
def verify(
    target: Path,
    keys: tuple[Path, ...],
    require_signature: bool,
    max_bytes: int | None,
    max_entries: int | None,
    max_ratio: float | None,
    output: str,
) -> None:
    """Verify a package ZIP or an unpacked pack DIR against its expert/package.json.

    Checks every listed file's sha256 and size, refuses unlisted files, unsafe
    (zip-slip) and symlink entries, archive bombs, and checks signatures.

    \b
    Examples:
      agentpack ecp verify my-expert.zip
      agentpack ecp verify my-expert.zip --key release.key.pub
      agentpack ecp verify unpacked/my-expert --json
    """
    from ..packaging.signing import load_public_key
    from ..packaging.verify import Limits
    from ..packaging.verify import verify as verify_package

    must_exist(target, "package")
    defaults = Limits()
    limits = Limits(
        max_entries=defaults.max_entries if max_entries is None else max_entries,
        max_total_bytes=defaults.max_total_bytes if max_bytes is None else max_bytes,
        max_ratio=defaults.max_ratio if max_ratio is None else max_ratio,
    )
    result = verify_package(
        target, trusted=[load_public_key(k) for k in keys], require_signature=require_signature, limits=limits
    )
    data = result.as_dict()
    data.pop("ok")
    if result.ok:
        signed = ", ".join(f"{s['key_id']} ({s['message']})" for s in result.signatures) or "unsigned"
        text = f"{target}: ok, {result.checked_files} files verified, {signed}"
    else:
        text = f"{target}: FAILED\n" + _findings_text(data["findings"])
    emit(envelope("ecp verify", result.ok, **data), output, text)


@click.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option(
    "--key",
    "key",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The ed25519 private key (PEM) to sign with.",
)
@click.option("--replace", is_flag=True, help="Replace an existing signature by the same key.")
@output_option(choices=("text", "json"), command="ecp sign")
def sign(target: Path, key: Path, replace: bool, output: str) -> None:
    """Sign a package ZIP (or unpacked pack) with an ed25519 key; the package must verify first.

    \b
    Example:
      agentpack ecp keygen release.key
      agentpack ecp sign my-expert.zip --key release.key
      agentpack ecp verify my-expert.zip --key release.key.pub
    """
    from ..packaging.sign import sign_package

    summary = sign_package(must_exist(target, "package"), key, replace=replace)
    emit(envelope("ecp sign", True, **summary), output, f"{target}: signed by key {summary['key_id']}")


@click.command()
@click.argument("keyfile", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite existing key files.")
@output_option(choices=("text", "json"), command="ecp keygen")
def keygen(keyfile: Path, force: bool, output: str) -> None:
    """Create an ed25519 key pair: KEYFILE (private, mode 0600) and KEYFILE.pub.

    \b
    Example:
      agentpack ecp keygen ~/.config/agentpack/release.key
    """
    from ..packaging.signing import generate_keypair

    summary = generate_keypair(keyfile, force=force)
    emit(
        envelope("ecp keygen", True, **summary),
        output,
        f"private key {summary['private_key']}\npublic key  {summary['public_key']}\nkey id      {summary['key_id']}",
    )


COMMANDS = [package, verify, sign, keygen]
