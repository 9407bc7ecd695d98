// Package feeder reads Crankfire's data feeders, CSV files with a header
// row and JSON arrays of flat objects, and hands their rows out in file
// order, one per request, across all workers. A run that needs more rows
// than the file has gets an error wrapping [vars.ErrExhausted] and stops,
// as Crankfire documents; with Recycle the rows start over instead. In a
// multi-host run, [Shared] hands each host batches of one run-wide row
// index through a [Claimer] (the cluster's Redis counter), so no row goes
// to two hosts; unused rows are given back when a host stops.
package feeder
