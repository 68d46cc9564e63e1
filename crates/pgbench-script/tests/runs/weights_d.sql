\set y random(1, 1000)
SELECT :client_id, 2, :y;
