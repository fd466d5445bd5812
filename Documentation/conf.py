# SPDX-License-Identifier: GPL-2.0
#
# Sphinx configuration of rdma-krust's documentation: the pages are plain
# reStructuredText in the kernel's style, rendered as the kernel's are
# (scripts/docs-check.sh builds them with warnings as errors in make test).
#
#   sphinx-build -W -b html Documentation /tmp/rdma-krust-html

project = "rdma-krust"
copyright = "The rdma-krust developers"
root_doc = "index"
exclude_patterns = ["_build"]
# ``foo`` is literal text, as in the kernel's pages.
default_role = "literal"
highlight_language = "none"
html_theme = "alabaster"
html_static_path = []
