"""The old name of :mod:`agents.greedy_kernels`, kept while code written against it is merged;
importing it gives that module itself (one module, one set of compiled kernels).  Import
:mod:`agents.greedy_kernels` instead."""

import sys

from . import greedy_kernels

sys.modules[__name__] = greedy_kernels
