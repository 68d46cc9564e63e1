\set u random(1, 1000000000)
\set e random_exponential(1, 1000000, 2.5)
\set g random_gaussian(1, 1000000, 2.5)
\set z random_zipfian(1, 1000000, 1.07)
\set p permute(:u, 1000003)
\set h hash(:u)
\set f hash_fnv1a(:u)
\set m hash_murmur2(:u, :client_id)
\set d random(0, 1000) / 7.0
SELECT :client_id, :u, :e, :g, :z, :p, :h, :f, :m, :d, :default_seed, :random_seed;
