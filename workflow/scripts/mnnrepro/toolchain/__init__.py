"""The toolchain stage, shared by the engine kinds (a source folder, never build output; rules
in workflow/rules/build.smk and engines.smk): the pinned NDK, the MNN
source (+ KleidiAI), CMake builds per platform (cmake), their SME2 kernels (kernels), the
correctness gate's token-id tool and the memory-bandwidth probe, built with an engine's
toolchain (tools, gate_common/, bandwidth_probe/), and engine keys and records (records)."""

from mnnrepro.errors import ReproError


class BuildError(ReproError, RuntimeError):
    """A build that failed or does not hold what its config says, worded for the user."""
