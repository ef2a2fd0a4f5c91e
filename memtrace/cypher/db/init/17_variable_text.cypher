// A timeline's variables by exact text (the digest of their value) in execution order: what an append links a new request's inputs to.
// params: -
// returns: -
CREATE INDEX variable_text IF NOT EXISTS FOR (n:Variable) ON (n.trace_id, n.text_key, n.seq)
