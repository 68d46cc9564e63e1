\set x random(1, 100)
SELECT 'a', :x;
