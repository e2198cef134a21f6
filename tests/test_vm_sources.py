"""The kernel fetcher's mirrors (tests/vm/sources.py) come from the machine's apt sources, in
both of apt's formats: one-line .list entries and deb822 .sources stanzas; other vendors'
entries, disabled stanzas, deb-src lines and comments are passed over."""
import pytest

from vm import kernels, sources


def write(etc, files):
    (etc / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (etc / name).write_text(text)


def test_a_local_mirror_in_a_one_line_list_is_taken(tmp_path):
    write(tmp_path, {"sources.list": "# a company mirror\n"
                                     "deb-src http://src.example/debian bookworm main\n"
                                     "deb [arch=amd64 signed-by=/k.gpg] http://mirror.corp:3142/debian/ bookworm main\n"
                                     "deb http://mirror.corp:3142/security bookworm-security main contrib\n",
                     "sources.list.d/vendor.list": "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n"})
    assert sources.mirrors(tmp_path) == {"debian": "http://mirror.corp:3142/debian",
                                         "security": "http://mirror.corp:3142/security"}


def test_deb822_stanzas_with_several_uris_and_suites_and_a_disabled_one(tmp_path):
    write(tmp_path, {"sources.list.d/debian.sources":
                     "Types: deb\n"
                     "# the proxy\n"
                     "URIs: http://proxy.lan/debian\n"
                     "Suites: bookworm bookworm-updates\n"
                     "Components: main\n"
                     "Enabled: no\n"
                     "\n"
                     "Types: deb deb-src\n"
                     "URIs: http://apt.lan/debian\n"
                     "  http://apt2.lan/debian\n"
                     "Suites: bookworm\n"
                     "Components: main\n"
                     "\n"
                     "Types: deb\n"
                     "URIs: http://apt.lan/debian-security\n"
                     "Suites: bookworm-security\n"
                     "Components: main\n",
                     "sources.list.d/nodesource.sources":
                     "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n"})
    found = sources.entries(tmp_path)
    assert [e.uri for e in found if e.suite == "bookworm"] == ["http://apt.lan/debian", "http://apt2.lan/debian"]
    assert sources.mirrors(tmp_path) == {"debian": "http://apt.lan/debian",
                                         "security": "http://apt.lan/debian-security"}


def test_without_a_security_archive_its_suites_are_left_out_of_the_fetchers_sources(tmp_path, monkeypatch):
    write(tmp_path, {"sources.list.d/x.list": "deb http://m.lan/debian bookworm main\n"})
    monkeypatch.setattr(kernels, "APT_ETC", tmp_path)
    monkeypatch.setattr(kernels, "_apt_dir", lambda: tmp_path / "apt")
    kernels._write_sources()
    lines = (tmp_path / "apt" / "sources.list").read_text().splitlines()
    assert all(" http://m.lan/debian " in ln for ln in lines)
    assert not any("-security" in ln for ln in lines)
    assert {ln.split()[-2] for ln in lines} == {s for s in kernels.SUITES if not s.endswith("-security")}


def test_sources_without_a_debian_archive_are_one_clear_error(tmp_path, monkeypatch):
    write(tmp_path, {"sources.list.d/vendor.list": "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n"})
    with pytest.raises(sources.SourcesError, match="name no Debian archive"):
        sources.mirrors(tmp_path)
