"""The container images of hdfs-chaos: the Debian base, the cluster image, Toxiproxy.

No container registry exists where hdfs-chaos runs, so nothing is pulled. The base image
is made from Debian packages: `mmdebstrap` writes a root filesystem tarball (cached
under tools/rootfs/, git-ignored) that `docker import` turns into `hdfs-chaos/base:<h>`,
where <h> hashes the recipe in cluster_image/base.json. The cluster image is built from
cluster_image/Dockerfile on top of it, with a build context holding only minihdfs/, the
hdfs_contract/ it imports and cluster_image/; its tag `hdfs-chaos/minihdfs:<h>` hashes exactly those files, so a build
for a source tree that already has an image is skipped. The Toxiproxy image puts the
toxiproxy-server binary on the same base.

Every image carries the label `org.hdfs-chaos.project=hdfs-chaos`, its kind and its
source hash, so `list_images` and `remove_images` find them all and nothing else.
Errors a user can cause (no engine, no mmdebstrap, no binary) raise `ImageError` with
one line that says how to fix it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOTFS_CACHE = REPO_ROOT / "tools" / "rootfs"
DEFAULT_TOXIPROXY_BINARY = REPO_ROOT / "tools" / "bin" / "toxiproxy-server"

PROJECT = "hdfs-chaos"
PROJECT_LABEL = "org.hdfs-chaos.project"
KIND_LABEL = "org.hdfs-chaos.image"
SOURCE_HASH_LABEL = "org.hdfs-chaos.source-hash"
BASE_LABEL = "org.hdfs-chaos.base-image"
LABELS = {PROJECT_LABEL: PROJECT}

BASE_REPOSITORY = "hdfs-chaos/base"
CLUSTER_REPOSITORY = "hdfs-chaos/minihdfs"
TOXIPROXY_REPOSITORY = "hdfs-chaos/toxiproxy"

# The folders whose files make the cluster image; their hash is its tag.
SOURCE_FOLDERS = ("minihdfs", "hdfs_contract", "cluster_image")
_IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache"}
_IGNORED_SUFFIXES = (".pyc", ".pyo", "~", ".swp")
_TAG_HEX = 12

Progress = Callable[[str], None]


class ImageError(RuntimeError):
    """An image cannot be built, listed or removed; the message says how to fix it."""


# ---------------------------------------------------------------- data: what an image is


def source_files(root: Path | str = REPO_ROOT) -> list[tuple[str, Path]]:
    """The files that make the cluster image, as (path relative to root, file), sorted.

    The same list feeds the source hash and the build context, so the tag names exactly
    what the image holds. Byte-code caches and editor droppings are left out.
    """
    root = Path(root)
    files = []
    for folder in SOURCE_FOLDERS:
        top = root / folder
        if not top.is_dir():
            raise ImageError(f"{top} is missing: the cluster image needs {', '.join(SOURCE_FOLDERS)}/")
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED_DIRS)
            for name in sorted(filenames):
                if name.endswith(_IGNORED_SUFFIXES):
                    continue
                path = Path(dirpath) / name
                files.append((path.relative_to(root).as_posix(), path))
    return sorted(files)


def source_snapshot(root: Path | str = REPO_ROOT) -> list[tuple[str, bool, bytes]]:
    """The cluster image's source read once: (relative path, executable?, bytes) per file.

    The hash and the build context are made from one snapshot, so a file edited while
    an image builds can never give an image whose tag names other bytes than it holds.
    """
    return [(rel, os.stat(path).st_mode & 0o111 != 0, path.read_bytes())
            for rel, path in source_files(root)]


def source_hash(root: Path | str = REPO_ROOT,
                snapshot: list[tuple[str, bool, bytes]] | None = None) -> str:
    """SHA-256 (hex) of the cluster image's source: every file's path, exec bit and bytes."""
    digest = hashlib.sha256()
    for rel, executable, data in snapshot if snapshot is not None else source_snapshot(root):
        digest.update(f"{rel}\0{int(executable)}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def cluster_tag(root: Path | str = REPO_ROOT, repository: str = CLUSTER_REPOSITORY) -> str:
    """The tag the cluster image of this source tree has (or will have once built)."""
    return f"{repository}:{source_hash(root)[:_TAG_HEX]}"


def base_recipe(root: Path | str = REPO_ROOT) -> dict:
    """The base image's recipe from cluster_image/base.json: suite, variant, packages."""
    path = Path(root) / "cluster_image" / "base.json"
    try:
        recipe = json.loads(path.read_text())
        return {"suite": str(recipe["suite"]), "variant": str(recipe.get("variant", "minbase")),
                "packages": [str(p) for p in recipe["packages"]]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ImageError(f"{path}: cannot read the base image recipe ({e})") from None


def base_hash(recipe: dict) -> str:
    """SHA-256 (hex) of a base recipe; the base image and its rootfs tarball are named by it."""
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def base_tag(root: Path | str = REPO_ROOT) -> str:
    """The tag of the base image for this source tree's recipe."""
    return f"{BASE_REPOSITORY}:{base_hash(base_recipe(root))[:_TAG_HEX]}"


def image_labels(kind: str, source: str, base: str | None = None,
                 extra: dict[str, str] | None = None) -> dict[str, str]:
    """The labels an image of this project carries: project, kind, source hash (and base)."""
    labels = {**LABELS, KIND_LABEL: kind, SOURCE_HASH_LABEL: source}
    if base:
        labels[BASE_LABEL] = base
    labels.update(extra or {})
    return labels


# ---------------------------------------------------------------- effects: the engine


def docker_client():
    """A Docker SDK client for the engine of DOCKER_HOST (or the local socket), or ImageError."""
    import docker  # imported here so the rest of the harness works without the SDK

    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=300)
        client.ping()
        return client
    except Exception as e:  # the SDK raises several types for "nobody answers"
        raise ImageError(f"no Docker engine answers at {where}: run tools/setup_docker.sh "
                         f"(as root) or start dockerd ({_first_line(e)})") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:200]


def _find_image(client, ref: str):
    import docker.errors

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as e:
        raise ImageError(f"cannot look up image {ref}: {_first_line(e)}") from None


@contextlib.contextmanager
def _build_lock(cache_dir: Path) -> Iterator[None]:
    """Serialises builds on this machine, so two runs never write the same tarball."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _mirror_for(suite: str) -> str:
    """The apt sources mmdebstrap should use: the host's if they serve `suite`, else Debian's."""
    for candidate in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        path = Path(candidate)
        try:
            text = path.read_text()
        except OSError:
            continue
        if "debian" in text and suite in text:
            return candidate
    return "http://deb.debian.org/debian"


def _build_rootfs(recipe: dict, tarball: Path, progress: Progress) -> None:
    """Runs mmdebstrap to write the base root filesystem to `tarball` (atomically)."""
    mmdebstrap = shutil.which("mmdebstrap")
    if not mmdebstrap:
        raise ImageError("mmdebstrap is not installed: run tools/setup_docker.sh (as root) "
                         "or apt-get install mmdebstrap")
    partial = tarball.with_name(tarball.name + ".partial")
    command = [
        mmdebstrap, f"--variant={recipe['variant']}",
        f"--include={','.join(recipe['packages'])}",
        '--aptopt=APT::Install-Recommends "false"',
        # Documentation and translations are dead weight in a test container.
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/info/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        "--format=tar",
        recipe["suite"], str(partial), _mirror_for(recipe["suite"]),
    ]
    progress(f"mmdebstrap: {recipe['suite']} {recipe['variant']} + {', '.join(recipe['packages'])}")
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace") as proc:
        tail: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            tail = (tail + [line])[-15:]
            if line.startswith(("I: ", "W: ", "E: ")):
                progress(f"  {line}")
    if proc.returncode != 0:
        partial.unlink(missing_ok=True)
        detail = " | ".join(l for l in tail if l)[-600:]
        raise ImageError(f"mmdebstrap failed (exit {proc.returncode}): {detail}")
    partial.replace(tarball)


def ensure_base_image(progress: Progress = print, *, root: Path | str = REPO_ROOT,
                      cache_dir: Path | str = DEFAULT_ROOTFS_CACHE, client=None) -> str:
    """Imports the Debian base image if it is missing (mmdebstrap first if not cached); its tag."""
    client = client or docker_client()
    recipe = base_recipe(root)
    digest = base_hash(recipe)
    tag = f"{BASE_REPOSITORY}:{digest[:_TAG_HEX]}"
    if _find_image(client, tag) is not None:
        progress(f"base image {tag} is present")
        return tag
    cache_dir = Path(cache_dir)
    with _build_lock(cache_dir):
        if _find_image(client, tag) is not None:  # another build made it while we waited
            return tag
        tarball = cache_dir / f"rootfs-{digest[:_TAG_HEX]}.tar"
        if tarball.exists():
            progress(f"base image {tag}: using cached root filesystem {tarball}")
        else:
            started = time.monotonic()
            progress(f"base image {tag}: building the root filesystem from Debian packages")
            _build_rootfs(recipe, tarball, progress)
            progress(f"  root filesystem ready in {time.monotonic() - started:.1f}s "
                     f"({tarball.stat().st_size / 2**20:.0f} MiB, cached at {tarball})")
        changes = [f"LABEL {k}={v}" for k, v in image_labels("base", digest).items()]
        changes += ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]']
        repository, _, version = tag.partition(":")
        started = time.monotonic()
        try:
            client.api.import_image(src=str(tarball), repository=repository, tag=version,
                                    changes=changes)
        except Exception as e:
            raise ImageError(f"docker import of {tarball} failed: {_first_line(e)}") from None
        if _find_image(client, tag) is None:
            raise ImageError(f"docker import of {tarball} reported no error but {tag} is missing")
        progress(f"base image {tag} imported in {time.monotonic() - started:.1f}s")
    return tag


def _tar_context(members: Iterable[tuple[str, bool, bytes]]) -> io.BytesIO:
    """A build context as an in-memory tar of (name in context, executable?, bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, executable, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755 if executable else 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def _docker_build(client, context: io.BytesIO, dockerfile: str, tag: str,
                  labels: dict[str, str], buildargs: dict[str, str], progress: Progress) -> None:
    """Builds `tag` from an in-memory context, streaming the builder's lines to progress."""
    try:
        for chunk in client.api.build(fileobj=context, custom_context=True, dockerfile=dockerfile,
                                      tag=tag, labels=labels, buildargs=buildargs, rm=True,
                                      forcerm=True, pull=False, decode=True):
            if "error" in chunk:
                raise ImageError(f"docker build of {tag} failed: {_first_line(chunk['error'])}")
            line = (chunk.get("stream") or "").rstrip()
            if line.startswith("Step "):
                progress(f"  {line}")
    except ImageError:
        raise
    except Exception as e:
        raise ImageError(f"docker build of {tag} failed: {_first_line(e)}") from None
    if _find_image(client, tag) is None:
        raise ImageError(f"docker build reported no error but {tag} is missing")


def build_image(progress: Progress = print, *, root: Path | str = REPO_ROOT,
                repository: str = CLUSTER_REPOSITORY, cache_dir: Path | str = DEFAULT_ROOTFS_CACHE,
                extra_labels: dict[str, str] | None = None) -> str:
    """Builds the cluster image for the source tree at `root` and returns its tag.

    Builds the Debian base first if it is missing. Skipped when an image with the same
    source hash exists already. `repository` and `extra_labels` let tests build apart
    from the user's images.
    """
    client = docker_client()
    snapshot = source_snapshot(root)
    digest = source_hash(snapshot=snapshot)
    tag = f"{repository}:{digest[:_TAG_HEX]}"
    if _find_image(client, tag) is not None:
        progress(f"cluster image {tag} is up to date (source {digest[:_TAG_HEX]}): nothing to build")
        return tag
    started = time.monotonic()
    base = ensure_base_image(progress, root=root, cache_dir=cache_dir, client=client)
    progress(f"cluster image {tag}: building from {base}")
    context = _tar_context(snapshot)
    labels = image_labels("cluster", digest, base, extra_labels)
    _docker_build(client, context, "cluster_image/Dockerfile", tag, labels,
                  {"BASE_IMAGE": base}, progress)
    progress(f"cluster image {tag} built in {time.monotonic() - started:.1f}s")
    return tag


def toxiproxy_hash(binary: bytes, dockerfile: bytes, base: str) -> str:
    """SHA-256 (hex) naming a Toxiproxy image: its binary, its Dockerfile and its base."""
    digest = hashlib.sha256()
    for part in (binary, dockerfile, base.encode()):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def build_toxiproxy_image(binary_path: Path | str | None = None, progress: Progress = print, *,
                          root: Path | str = REPO_ROOT, repository: str = TOXIPROXY_REPOSITORY,
                          cache_dir: Path | str = DEFAULT_ROOTFS_CACHE,
                          extra_labels: dict[str, str] | None = None) -> str:
    """Builds the Toxiproxy image around the toxiproxy-server binary and returns its tag.

    `binary_path` defaults to tools/bin/toxiproxy-server. The tag hashes the binary, the
    Dockerfile and the base, so a rebuild of an unchanged binary is skipped.
    """
    binary = Path(binary_path) if binary_path else DEFAULT_TOXIPROXY_BINARY
    if not binary.is_file():
        raise ImageError(f"toxiproxy-server binary not found at {binary}: build it into "
                         f"tools/bin/ (go install of Shopify's toxiproxy) or pass its path")
    dockerfile = Path(root) / "cluster_image" / "toxiproxy.Dockerfile"
    try:
        dockerfile_text = dockerfile.read_bytes()
    except OSError as e:
        raise ImageError(f"{dockerfile}: {e.strerror}") from None
    client = docker_client()
    binary_bytes = binary.read_bytes()
    digest = toxiproxy_hash(binary_bytes, dockerfile_text, base_tag(root))
    tag = f"{repository}:{digest[:_TAG_HEX]}"
    if _find_image(client, tag) is not None:
        progress(f"toxiproxy image {tag} is up to date: nothing to build")
        return tag
    started = time.monotonic()
    base = ensure_base_image(progress, root=root, cache_dir=cache_dir, client=client)
    progress(f"toxiproxy image {tag}: building from {base} with {binary}")
    context = _tar_context([("Dockerfile", False, dockerfile_text),
                            ("toxiproxy-server", True, binary_bytes)])
    labels = image_labels("toxiproxy", digest, base, extra_labels)
    _docker_build(client, context, "Dockerfile", tag, labels, {"BASE_IMAGE": base}, progress)
    progress(f"toxiproxy image {tag} built in {time.monotonic() - started:.1f}s")
    return tag


def _describe(image, current: set[str]) -> dict:
    labels = image.labels or {}
    source = labels.get(SOURCE_HASH_LABEL, "")
    return {
        "id": image.short_id.removeprefix("sha256:"),
        "tags": list(image.tags),
        "kind": labels.get(KIND_LABEL, "unknown"),
        "source_hash": source[:_TAG_HEX],
        "created": image.attrs.get("Created", ""),
        "size_mb": round(image.attrs.get("Size", 0) / 2**20, 1),
        "current": bool(set(image.tags) & current),
    }


def _current_tags(root: Path | str = REPO_ROOT) -> set[str]:
    """The tags this tree would build: base, cluster, and Toxiproxy from tools/bin/."""
    tags = set()
    with contextlib.suppress(ImageError):
        tags.add(cluster_tag(root))
    with contextlib.suppress(ImageError, OSError):
        base = base_tag(root)
        tags.add(base)
        dockerfile = (Path(root) / "cluster_image" / "toxiproxy.Dockerfile").read_bytes()
        binary = DEFAULT_TOXIPROXY_BINARY.read_bytes()
        tags.add(f"{TOXIPROXY_REPOSITORY}:{toxiproxy_hash(binary, dockerfile, base)[:_TAG_HEX]}")
    return tags


def list_images(*, extra_filters: dict[str, str] | None = None) -> list[dict]:
    """Every image of this project, newest first: id, tags, kind, source hash, size, current.

    `current` is true for the images the tree at hand builds: its base and cluster
    images, and the Toxiproxy image of tools/bin/toxiproxy-server.
    """
    client = docker_client()
    labels = [f"{PROJECT_LABEL}={PROJECT}"] + [f"{k}={v}" for k, v in (extra_filters or {}).items()]
    try:
        images = client.images.list(filters={"label": labels})
    except Exception as e:
        raise ImageError(f"cannot list images: {_first_line(e)}") from None
    current = _current_tags()
    described = [_describe(image, current) for image in images]
    return sorted(described, key=lambda d: d["created"], reverse=True)


def remove_images(all: bool = False, progress: Progress = print, *,
                  extra_filters: dict[str, str] | None = None) -> list[str]:
    """Removes this project's stale images, or every one of them with all=True.

    Stale means an image the tree at hand does not build (see list_images); while
    tools/bin/toxiproxy-server is missing, Toxiproxy images are kept but with all=True.
    Returns what was removed (tags, or ids of untagged images).
    An image a container still uses is left, and ImageError then names it.
    """
    import docker.errors

    client = docker_client()
    found = list_images(extra_filters=extra_filters)
    keep_toxiproxy = not DEFAULT_TOXIPROXY_BINARY.is_file()
    doomed = [d for d in found if all or not (
        d["current"] or (keep_toxiproxy and d["kind"] == "toxiproxy"))]
    # Children before the base they were built on, or the base would be refused.
    doomed.sort(key=lambda d: d["kind"] == "base")
    removed, refused = [], []
    for image in doomed:
        for ref in image["tags"] or [image["id"]]:
            try:
                client.images.remove(ref, noprune=False)
                removed.append(ref)
                progress(f"removed {ref}")
            except docker.errors.ImageNotFound:
                continue
            except docker.errors.APIError as e:
                refused.append(f"{ref} ({_first_line(e)})")
    if refused:
        raise ImageError(f"could not remove {len(refused)} image(s), remove their containers "
                         f"first: {'; '.join(refused)}")
    return removed
