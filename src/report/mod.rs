//! Report writers: markdown, CSV, JSON, SVG plots; the regress verdict.
