DROP TABLE sandbox_runs;
