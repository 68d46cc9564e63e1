\set y random(1, 100)
SELECT 'b', :y;
