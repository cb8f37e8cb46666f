"""A stand-in for AWS's torch_neuronx, for tests only: it records how capture/ calls it.

It checks the wiring of the Neuron backend against the documented API (docs/neuron-formats.md §4.1);
it is not torch-neuronx and runs nothing on a NeuronCore.
"""

__version__ = "0.0-stub"
CALLS: list[tuple[str, object]] = []


def synchronize() -> None:
    CALLS.append(("synchronize", None))
