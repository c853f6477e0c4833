"""The old name of :mod:`agents.scorer_kernels`, kept while code written against it is merged;
importing it gives that module itself (one module, one set of compiled kernels).  Import
:mod:`agents.scorer_kernels` instead."""

import sys

from . import scorer_kernels

sys.modules[__name__] = scorer_kernels
