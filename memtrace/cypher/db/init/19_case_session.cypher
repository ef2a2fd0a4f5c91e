// Cases of one session (OpenInference session.id, Langfuse's session id).
// params: -
// returns: -
CREATE INDEX case_session IF NOT EXISTS FOR (n:Case) ON (n.session_id)
