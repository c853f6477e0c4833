"""The old name of :mod:`conquian_env.kernels` (the compiled batched engine), kept while code
written against it is merged; importing it gives that module itself (one module, one set of
compiled kernels).  Import :mod:`conquian_env.kernels` instead."""

import sys

from . import kernels

sys.modules[__name__] = kernels
