\set v random(1, 9)
\startpipeline
SELECT :v;
SELECT :v + 1;
\endpipeline
SELECT 'after', :v;
