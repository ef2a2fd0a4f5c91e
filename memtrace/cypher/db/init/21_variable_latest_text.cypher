// A timeline's latest variable holding each exact text (only it carries latest_text_key): what an append links a new request's input to, one seek whatever the number of equal texts.
// params: -
// returns: -
CREATE INDEX variable_latest_text IF NOT EXISTS FOR (n:Variable) ON (n.trace_id, n.latest_text_key)
