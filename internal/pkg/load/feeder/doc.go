// Package feeder reads Crankfire's data feeders, CSV files with a header
// row and JSON arrays of flat objects, and hands their rows out in file
// order, one per request, across all workers. With Recycle (the load
// config's default, as Crankfire's binary loops) the rows start over;
// without it a run that needs more rows than the file has gets an error
// wrapping [vars.ErrExhausted] and stops. In a
// multi-host run, [Shared] hands each host batches of one run-wide row
// index through a [Claimer] (the cluster's Redis counter), so no row goes
// to two hosts; unused rows are given back when a host stops.
package feeder
