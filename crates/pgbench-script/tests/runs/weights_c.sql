\set x random(1, 1000)
SELECT :client_id, 1, :x;
