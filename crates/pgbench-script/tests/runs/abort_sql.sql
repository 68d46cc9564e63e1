\set x random(1, 10)
SELECT :x;
SELECT 1 +;
