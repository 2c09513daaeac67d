"""The fake pynvml stays faithful to the installed one: names, constants, shapes, error classes."""

from __future__ import annotations

import inspect

import pynvml
import pytest

from tests.fakes import fake_pynvml as fake


def test_every_function_the_fake_offers_exists_in_pynvml_with_the_same_parameters() -> None:
    module = fake.fake_pynvml([fake.FakeDevice()])
    functions = [
        name for name in dir(module) if name.startswith("nvml") and callable(getattr(module, name))
    ]
    functions = [name for name in functions if not name.startswith("nvmlFriendly")]
    assert "nvmlDeviceGetUtilizationRates" in functions
    for name in functions:
        real = inspect.signature(getattr(pynvml, name))
        faked = inspect.signature(getattr(module, name))
        assert list(faked.parameters) == list(real.parameters), name


def test_the_fake_constants_have_pynvml_values() -> None:
    names = [n for n in dir(fake) if n.startswith(("NVML_", "nvmlClocksEventReason"))]
    assert "NVML_PCIE_UTIL_RX_BYTES" in names
    for name in names:
        assert getattr(fake, name) == getattr(pynvml, name), name


def test_the_fake_structures_have_pynvml_fields() -> None:
    for name in ("c_nvmlUtilization_t", "c_nvmlMemory_t", "c_nvmlProcessUtilizationSample_t"):
        assert getattr(fake, name)._fields_ == getattr(pynvml, name)._fields_, name


@pytest.mark.parametrize("code", [3, 9, 12, 999])
def test_the_fake_errors_turn_into_the_subclass_for_their_code_as_pynvml_does(code: int) -> None:
    real, faked = pynvml.NVMLError(code), fake.NVMLError(code)
    assert type(faked).__name__ == type(real).__name__
    assert isinstance(faked, fake.NVMLError) and faked.value == code
    assert str(faked) == str(real)


def test_the_fake_names_its_error_classes_as_pynvml_does() -> None:
    for name in (
        "NVMLError_NotSupported",
        "NVMLError_LibraryNotFound",
        "NVMLError_DriverNotLoaded",
    ):
        assert issubclass(getattr(fake, name), fake.NVMLError)
        assert issubclass(getattr(pynvml, name), pynvml.NVMLError)
        assert getattr(fake, name)().value == getattr(pynvml, name)().value
