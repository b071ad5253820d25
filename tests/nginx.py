"""A real nginx (Debian's nginx-light) on loopback, configured with the manual's deploy recipe.

The server block is read from docs/operations.md (the ```nginx block under "Deploying behind nginx") and
only its machine-specific values are swapped: listen address, certificate, site folder and the API's
address, each of which must be found, so the recipe and the tested config cannot drift apart.
nginx runs in the foreground as one process (``master_process off``: no worker switching to user
``nobody``, so root and non-root alike can read the temporary folder), with its prefix, pid, logs and
temp folders in a temporary directory. TLS uses a self-signed certificate made here with openssl.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RECIPE_PAGE = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
RECIPE_HEADING = "## Deploying behind nginx"
HOST = "127.0.0.1"

# The recipe's values for a real machine, and what the test puts in their place.
RECIPE_LISTEN = "listen 443 ssl;"
RECIPE_CERT = "/etc/letsencrypt/live/docs.example.org/fullchain.pem"
RECIPE_KEY = "/etc/letsencrypt/live/docs.example.org/privkey.pem"
RECIPE_SITE = "/srv/docs/build"
RECIPE_API = "http://127.0.0.1:8000"


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/sbin/nginx") if Path(path).is_file()), None
    )
    if found is None:
        raise RuntimeError("nginx is missing: run scripts/setup-test-deps (apt-get install nginx-light)")
    return found


def recipe(page: Path = RECIPE_PAGE) -> str:
    """The nginx configuration the manual's deploy section gives, as written there."""
    text = page.read_text(encoding="utf-8")
    section = text[text.index(RECIPE_HEADING) :]
    match = re.search(r"```nginx\n(.*?)```", section, re.DOTALL)
    if match is None:
        raise ValueError(f"no ```nginx block under {RECIPE_HEADING!r} in {page}")
    return match.group(1)


def _swap(config: str, old: str, new: str) -> str:
    if old not in config:
        raise ValueError(f"the manual's nginx recipe no longer contains {old!r}: update tests/nginx.py")
    return config.replace(old, new)


def recipe_for_test(*, port: int, cert: Path, key: Path, site_dir: Path, api_url: str) -> str:
    config = recipe()
    config = _swap(config, RECIPE_LISTEN, f"listen {HOST}:{port} ssl;")
    config = _swap(config, RECIPE_CERT, str(cert))
    config = _swap(config, RECIPE_KEY, str(key))
    config = _swap(config, RECIPE_SITE, str(site_dir))
    return _swap(config, RECIPE_API, api_url)


def site_served_by_bookwise(config: str, api_url: str) -> str:
    """The manual's variant for `bookwise serve --site`: no root, try_files or error_page, and
    `location /` passed to the API like `/api/`."""
    for pattern in (r"\n *root [^;]*;[^\n]*", r"\n *location / \{[^}]*\}", r"\n *error_page [^;]*;"):
        config, found = re.subn(pattern, "", config, count=1)
        if not found:
            raise ValueError(f"the manual's nginx recipe has no {pattern!r}: update tests/nginx.py")
    return _swap(
        config,
        "    location /api/ {",
        f"    location / {{\n        proxy_pass {api_url};\n    }}\n    location /api/ {{",
    )


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (certificate, key). It is its own CA."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=bookwise-test",
         "-addext", f"subjectAltName=IP:{HOST},DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def free_port() -> int:
    # nginx binds by itself, so the port is picked then released (a small race, retried by the caller).
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _mime_types() -> str:
    debian = Path("/etc/nginx/mime.types")
    return f"include {debian};" if debian.is_file() else "types { text/html html; text/javascript js; }"


def _main_config(prefix: Path, server_config: str) -> str:
    temp = prefix / "temp"
    return f"""\
daemon off;
master_process off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    {_mime_types()}
    default_type application/octet-stream;
{server_config}
}}
"""


@contextmanager
def running_nginx(prefix: Path, server_config: str, port: int, start_timeout: float = 10.0) -> Iterator[str]:
    """Run nginx with ``server_config`` inside its http block; yield ``https://127.0.0.1:port``."""
    (prefix / "temp").mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(_main_config(prefix, server_config), encoding="utf-8")
    process = subprocess.Popen(
        [nginx_binary(), "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if process.poll() is not None:
                log = (
                    (prefix / "error.log").read_text(errors="replace")
                    if (prefix / "error.log").exists()
                    else ""
                )
                stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"nginx exited with {process.returncode}:\n{stderr}{log}")
            try:
                socket.create_connection((HOST, port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"nginx did not listen on {HOST}:{port} within {start_timeout}s"
                    ) from None
                time.sleep(0.02)
        yield f"https://{HOST}:{port}"
    finally:
        process.terminate()  # nginx's fast shutdown; our own child, by its handle
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()
