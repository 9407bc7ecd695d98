// Package resultview turns a load test's result into the page people look
// at: one self-contained HTML file ([WriteHTML], or [BuildSummary] from a
// [summary.Summary] already computed) with the asked and achieved rate,
// latency percentiles and errors over time (and, for several endpoints,
// each endpoint's rate, p50 and p99), the HDR percentile spectrum,
// per-endpoint and per-protocol tables, the most frequent error messages,
// thresholds, generator health, per-host rows and the run's metadata; and
// the same page served live while a test runs ([Dashboard], updated through
// Server-Sent Events), alone or, on a daemon, under the list of its running
// load steps ([Jobs]).
//
// # The page
//
// Charts are inline SVG drawn here, in Go; the page needs no network
// access and no fonts. Its one script, written as it is (hover.js), shows
// a chart's values under the pointer from the chart's data attributes; the
// live dashboard adds a dozen lines that swap in each update. Every string
// from the run (endpoint names,
// URLs, threshold text, error classes, metadata) is escaped exactly as
// html/template escapes HTML text and attribute values, and stays text; the
// page is written in Go rather than by html/template so that forgeload's
// binary does not keep every exported method (html.go says why). On the daemon's jobs page every row, page and update of
// a job's step also goes through that job's mask as the last step before it
// is written, so no string of the job (an endpoint name, a config key, a
// URL, an error) shows a secret the job's log would hide. Numbers come from [summary.Of], the same view the
// JSON result is written from, so the page and the JSON agree.
//
// # Size
//
// A series longer than [MaxPoints] seconds is shown in buckets of several
// seconds: rates are averaged over the bucket, counts per second likewise,
// and each bucket's percentiles are read from the merge of its seconds'
// histograms (never averaged). The totals and the spectrum always come from
// the run's full histogram. A one-hour run's page stays well under 1 MB.
package resultview
