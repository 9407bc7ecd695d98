// Command clusterbench measures the aggregate throughput of 1, 2 and 3
// forgeload cluster workers on one machine; bench/cluster/run.sh drives it.
//
// In worker mode it joins the Redis pool exactly as `forgeload daemon` with
// cluster.redis_url does (a cluster.Pool whose segments run through
// loadrun.SegmentRunner, the daemon's own segment runner), without a
// forge. In coord mode it coordinates one closed-loop or fixed-rate test
// over -workers of them with cluster.Coordinate, as the load step does, and
// prints the merged result as one JSON line. All load goes to the -target
// URL, which must be on 127.0.0.1, and every run is bounded by -duration.
package main
