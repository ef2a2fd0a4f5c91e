// Cases of one user across timelines and traces (a timeline's cases carry the user, session and conversation ids of their request).
// params: -
// returns: -
CREATE INDEX case_user IF NOT EXISTS FOR (n:Case) ON (n.user_id)
