"""Kernel names as people read them: c++filt demangles (cached, once per name), a missing
c++filt leaves names as they were, and the short form folds templates and parameters."""

from __future__ import annotations

import shutil

import pytest

from torchtop.tui import demangle
from torchtop.tui.demangle import demangled, short_name

needs_cxxfilt = pytest.mark.skipif(shutil.which("c++filt") is None, reason="no c++filt here")


@needs_cxxfilt
def test_a_mangled_name_is_demangled_once_and_then_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = "_ZN2at6native6kernelIfLi4EEEvPT_i"
    calls: list[list[str]] = []
    real = demangle.run_cxxfilt

    def counted(names: list[str]) -> list[str]:
        calls.append(names)
        return real(names)

    monkeypatch.setattr(demangle, "run_cxxfilt", counted)
    monkeypatch.setattr(demangle, "_known", {})
    first = demangled([name, "volta_sgemm_64x64_nt", name])
    again = demangled([name])
    assert first == {name: "void at::native::kernel<float, 4>(float*, int)"}
    assert again == first and calls == [[name]]


def test_without_cxxfilt_names_stay_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _: None)
    monkeypatch.setattr(demangle, "_known", {})
    assert demangled(["_Z3foov"]) == {"_Z3foov": "_Z3foov"}


def test_the_short_form_folds_templates_and_parameters_but_keeps_the_name() -> None:
    name = "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3>(int, float const*, bool)"
    assert short_name(name) == "void cudnn::detail::dgrad_engine<…>(…)"
    assert short_name("volta_sgemm_64x64_nt") == "volta_sgemm_64x64_nt"
