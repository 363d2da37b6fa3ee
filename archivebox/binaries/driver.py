"""Load or install one binary through abxpkg; run as a script under the hooks' interpreter.

abxpkg needs Python >= 3.12 and the engine runs on 3.11, so the engine does not import
abxpkg: it runs this file with the hook runtime's interpreter (where abxpkg is installed),
as a Process row. It imports only the standard library and abxpkg.

Input: one JSON object as the first argument::

    {"name": "trafilatura", "binproviders": "uv,env", "min_version": null,
     "overrides": {"uv": {...}}, "postinstall_scripts": true, "install": true}

Output: one JSON line on stdout, the last one: ``{"abspath", "version", "sha256",
"binprovider", "env"}`` (``env``: what its provider adds to a runner's environment:
PATH, PYTHONPATH, NODE_PATH, ...), or ``{"error": "why"}`` with exit code 1.
Installers' own output goes to stderr.
"""

from __future__ import annotations

import json
import sys


def short_reason(err: BaseException) -> str:
    """abxpkg's errors carry every provider's full output: keep one line per provider."""
    errors = getattr(err, "errors", None)
    if isinstance(errors, dict) and errors:
        parts = []
        for provider, text in errors.items():
            lines = [line.strip() for line in str(text).splitlines()
                     if line.strip() and not line.strip().startswith(("WARNING:", "Traceback", "File "))
                     and "complete log of this run" not in line]
            errors_said = [line for line in lines if "error" in line.lower()]
            said = (errors_said or lines or ["failed"])[-1]
            parts.append(f"{provider}: {said}")
        return "; ".join(parts)
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def with_python_lib(value):
    """``{PYTHON_LIB}`` in a request (the engine cannot know it) -> ``python3.N`` of this interpreter."""
    if isinstance(value, str):
        return value.replace("{PYTHON_LIB}", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    if isinstance(value, list):
        return [with_python_lib(item) for item in value]
    if isinstance(value, dict):
        return {key: with_python_lib(item) for key, item in value.items()}
    return value


def main(argv: list[str]) -> int:
    request = with_python_lib(json.loads(argv[1]))
    # Anything abxpkg or its installers print goes to stderr: stdout carries the answer.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        from abxpkg import PROVIDER_CLASS_BY_NAME, Binary
        from abxpkg.config import build_exec_env

        names = [n.strip() for n in str(request.get("binproviders") or "env").split(",") if n.strip()]
        unknown = [n for n in names if n not in PROVIDER_CLASS_BY_NAME]
        if unknown:
            raise ValueError(f"unknown binproviders {', '.join(unknown)}")
        binary = Binary(name=request["name"], binproviders=[PROVIDER_CLASS_BY_NAME[n]() for n in names],
                        min_version=request.get("min_version") or None, overrides=request.get("overrides") or {},
                        postinstall_scripts=request.get("postinstall_scripts"))
        try:
            loaded = binary.load()
        except Exception as err:  # noqa: BLE001 - any load failure means: install it
            if not request.get("install", True):
                raise
            print(f"{request['name']} not loaded ({short_reason(err)}): installing", file=sys.stderr)
            loaded = binary.install()
        provider = loaded.loaded_binprovider
        env = build_exec_env(providers=[provider, *provider.exec_env_providers()], base_env={})
        answer = {"abspath": str(loaded.loaded_abspath), "version": str(loaded.loaded_version or ""),
                  "sha256": str(loaded.loaded_sha256 or ""), "binprovider": provider.name, "env": env}
        code = 0
    except Exception as err:  # noqa: BLE001 - reported to the engine as the reason, exit 1
        answer, code = {"error": short_reason(err)}, 1
    finally:
        sys.stdout = real_stdout
    print(json.dumps(answer), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
