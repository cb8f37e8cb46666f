"""traceana: offline analysis of exported accelerator profiles."""
