"""Forge permalinks: a template from each spelling of a git remote, configured templates checked, links built,
and every remote that is local, unknown or malformed getting no link rather than an error or a guess."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from daemon.config import ConfigError, load_config
from indexer.forge import LinkTemplateError, check_template, permalink, template_for_remote
from indexer.links import origin_remote, repository_link_template

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def link(remote: str, path: str = "src/a b.md", start: int = 3, end: int = 5) -> str | None:
    return permalink(template_for_remote(remote), COMMIT, path, start, end)


@pytest.mark.parametrize(
    "remote",
    [
        "git@github.com:rust-lang/rustc-dev-guide.git",
        "git@github.com:rust-lang/rustc-dev-guide",
        "ssh://git@github.com/rust-lang/rustc-dev-guide.git",
        "ssh://git@ssh.github.com:443/rust-lang/rustc-dev-guide.git",
        "git+ssh://git@github.com/rust-lang/rustc-dev-guide.git",
        "git://github.com/rust-lang/rustc-dev-guide.git",
        "https://github.com/rust-lang/rustc-dev-guide.git",
        "https://github.com/rust-lang/rustc-dev-guide/",
        "https://someone:ghp_secret@GitHub.com/rust-lang/rustc-dev-guide",
        "  https://github.com/rust-lang/rustc-dev-guide.git\n",
    ],
)
def test_every_spelling_of_a_github_remote_links_to_the_blob_at_the_commit(remote: str) -> None:
    assert link(remote) == (f"https://github.com/rust-lang/rustc-dev-guide/blob/{COMMIT}/src/a%20b.md#L3-L5")


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("git@gitlab.com:group/sub/project.git", "https://gitlab.com/group/sub/project/-/blob/{c}/d.md#L3-5"),
        ("https://gitlab.com/group/project", "https://gitlab.com/group/project/-/blob/{c}/d.md#L3-5"),
        (
            "ssh://git@gitlab.example.org:2222/team/docs.git",
            "https://gitlab.example.org/team/docs/-/blob/{c}/d.md#L3-5",
        ),
        (
            "https://gitlab.example.org:8443/team/docs.git",
            "https://gitlab.example.org:8443/team/docs/-/blob/{c}/d.md#L3-5",
        ),
        ("git@codeberg.org:forgejo/docs.git", "https://codeberg.org/forgejo/docs/src/commit/{c}/d.md#L3-L5"),
        ("https://gitea.com/gitea/docs.git", "https://gitea.com/gitea/docs/src/commit/{c}/d.md#L3-L5"),
        (
            "http://forgejo.intranet.example/wiki/handbook",
            "http://forgejo.intranet.example/wiki/handbook/src/commit/{c}/d.md#L3-L5",
        ),
        (
            "git@gitea.example.com:ops/runbooks.git",
            "https://gitea.example.com/ops/runbooks/src/commit/{c}/d.md#L3-L5",
        ),
        ("git@bitbucket.org:team/handbook.git", "https://bitbucket.org/team/handbook/src/{c}/d.md#lines-3:5"),
        (
            "https://jane@bitbucket.org/team/handbook.git",
            "https://bitbucket.org/team/handbook/src/{c}/d.md#lines-3:5",
        ),
    ],
)
def test_gitlab_gitea_forgejo_and_bitbucket_remotes_use_their_own_line_anchors(
    remote: str, expected: str
) -> None:
    assert link(remote, "d.md") == expected.format(c=COMMIT)


@pytest.mark.parametrize(
    "remote",
    [
        "",
        "   ",
        "/srv/git/docs.git",
        "../docs",
        "file:///srv/git/docs.git",
        "C:\\repos\\docs",
        "git@git.example.com:team/docs.git",
        "https://example.com/team/docs.git",
        "https://github.example.com/team/docs.git",
        "https://github.com/",
        "https://github.com/only-owner",
        "https://github.com/owner/repo/tree/main",
        "git@github.com:",
        "git@github.com:owner/../repo.git",
        "https://github.com/owner/re{po}.git",
        "https://github.com:notaport/owner/repo",
        "https://[::1/owner/repo",
        "ftp://github.com/owner/repo.git",
        "https://gitlab.com/group",
        "github.com owner repo",
    ],
)
def test_a_local_unknown_or_malformed_remote_gets_no_link_and_no_error(remote: str) -> None:
    assert template_for_remote(remote) is None
    assert link(remote) is None


def test_no_link_without_a_commit_or_with_one_that_is_not_an_object_name() -> None:
    template = template_for_remote("git@github.com:o/r.git")
    assert permalink(template, None, "a.md", 1, 1) is None
    assert permalink(template, "main; rm -rf", "a.md", 1, 1) is None
    assert permalink(None, COMMIT, "a.md", 1, 1) is None


def test_a_configured_template_is_checked_and_filled() -> None:
    template = check_template("https://git.example.com/docs/blob/{commit}/{path}?plain=1#L{start}-L{end}")
    assert permalink(template, COMMIT, "guide/x.md", 7, 9) == (
        f"https://git.example.com/docs/blob/{COMMIT}/guide/x.md?plain=1#L7-L9"
    )


@pytest.mark.parametrize(
    ("template", "complaint"),
    [
        ("git.example.com/{commit}/{path}", "must start with https://"),
        ("https://git.example.com/{commit}/{file}", "unknown placeholder(s) file"),
        ("https://git.example.com/{commit}#L{start}", "needs {path}"),
        ("https://git.example.com/{commit}/{path", "malformed link template"),
    ],
)
def test_a_bad_configured_template_is_a_clear_error(template: str, complaint: str) -> None:
    with pytest.raises(LinkTemplateError) as raised:
        check_template(template)
    assert complaint in str(raised.value)


def test_the_configuration_refuses_a_bad_link_naming_the_repository(tmp_path: Path) -> None:
    config = tmp_path / "citeline.toml"
    config.write_text(f'[[repositories]]\npath = "{tmp_path}"\nlink = "https://x.example/{{sha}}/{{path}}"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(config, env={})
    message = str(raised.value)
    assert "link" in message and "unknown placeholder(s) sha" in message and str(tmp_path) in message


def test_the_configuration_keeps_a_good_link(tmp_path: Path) -> None:
    config = tmp_path / "citeline.toml"
    template = "https://x.example/docs/{commit}/{path}#L{start}"
    config.write_text(f'[[repositories]]\npath = "{tmp_path}"\nlink = "{template}"\n')
    assert load_config(config, env={}).repositories[0].link == template


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_the_origin_remote_of_a_checkout_gives_its_template_and_configuration_wins(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    assert origin_remote(tmp_path) is None
    assert repository_link_template(tmp_path, None) is None
    git(tmp_path, "remote", "add", "origin", "git@gitlab.com:docs/handbook.git")
    (tmp_path / "sub").mkdir()
    assert origin_remote(tmp_path / "sub") == "git@gitlab.com:docs/handbook.git"
    assert repository_link_template(tmp_path, None) == template_for_remote("git@gitlab.com:docs/handbook.git")
    assert repository_link_template(tmp_path, "https://x.example/{commit}/{path}") == (
        "https://x.example/{commit}/{path}"
    )


def test_a_folder_outside_any_checkout_has_no_remote(tmp_path: Path) -> None:
    assert origin_remote(tmp_path / "missing") is None
    assert repository_link_template(tmp_path / "missing", None) is None


def test_a_repository_in_a_subfolder_of_a_checkout_links_to_the_file_where_the_forge_has_it(
    tmp_path: Path,
) -> None:
    git(tmp_path, "init", "-q")
    git(tmp_path, "remote", "add", "origin", "https://github.com/rust-lang/rust.git")
    guide = tmp_path / "src" / "doc" / "dev guide"
    guide.mkdir(parents=True)
    template = repository_link_template(guide, None)
    assert permalink(template, COMMIT, "building/x.md", 4, 4) == (
        f"https://github.com/rust-lang/rust/blob/{COMMIT}/src/doc/dev%20guide/building/x.md#L4-L4"
    )
    configured = repository_link_template(guide, "https://mirror.example/{commit}/{path}")
    assert (
        permalink(configured, COMMIT, "a.md", 1, 1)
        == f"https://mirror.example/{COMMIT}/src/doc/dev%20guide/a.md"
    )
