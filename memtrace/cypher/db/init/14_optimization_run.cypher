// Unique optimization run ids.
// params: -
// returns: -
CREATE CONSTRAINT optimization_run_id IF NOT EXISTS FOR (r:OptimizationRun) REQUIRE r.id IS UNIQUE
