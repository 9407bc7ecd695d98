package resultview

import (
	"slices"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// epPoint is one endpoint's drawn point: its rate and latency
// percentiles over a row's seconds, as [row] is the run's.
type epPoint struct{ requests, p50, p99 float64 }

// endpointNames are the endpoints the seconds have rows of, in the order
// they first appear (the config's), at most load.MaxEndpointSeries.
func endpointNames(secs []load.Second) []string {
	var names []string
	for i := range secs {
		for _, e := range secs[i].Endpoints {
			if !slices.Contains(names, e.Name) && len(names) < load.MaxEndpointSeries {
				names = append(names, e.Name)
			}
		}
	}
	return names
}

// endpointBuckets are the per-endpoint points of the seconds in buckets
// of size seconds (see buckets): for each bucket, one point per name.
// Rates are averaged over the bucket; percentiles are read from the
// merge of its seconds' histograms, never averaged.
func endpointBuckets(secs []load.Second, names []string, size int) [][]epPoint {
	var out [][]epPoint
	for i := 0; i < len(secs); i += size {
		part := secs[i:min(i+size, len(secs))]
		n := float64(len(part))
		pts := make([]epPoint, len(names))
		for j, name := range names {
			p := &pts[j]
			var h *load.PackedHistogram // a few hundred bytes, where a dense one takes 140 KB
			for k := range part {
				e := secondEndpoint(&part[k], name)
				if e == nil {
					continue
				}
				p.requests += float64(e.Requests) / n
				switch {
				case e.Hist.Count() == 0:
				case size == 1:
					p.p50, p.p99 = ms(e.P50), ms(e.P99)
				case h == nil:
					h = e.Hist.Clone()
				default:
					h.Merge(e.Hist)
				}
			}
			if h != nil {
				p.p50, p.p99 = ms(h.Quantile(0.5)), ms(h.Quantile(0.99))
			}
		}
		out = append(out, pts)
	}
	return out
}

// secondEndpoint is s's row of the endpoint named name, or nil.
func secondEndpoint(s *load.Second, name string) *load.SecondEndpoint {
	for i := range s.Endpoints {
		if s.Endpoints[i].Name == name {
			return &s.Endpoints[i]
		}
	}
	return nil
}

// endpointSeries is one series per endpoint, of f of its points.
func endpointSeries(names []string, rows []row, eps [][]epPoint, suffix string, f func(*epPoint) float64) []Series {
	out := make([]Series, len(names))
	for j, name := range names {
		s := Series{Name: name + suffix, Points: make([]Point, len(rows)), Color: palette[j%len(palette)]}
		for i := range rows {
			s.Points[i] = Point{X: rows[i].x, Y: f(&eps[i][j])}
		}
		out[j] = s
	}
	return out
}

func endpointRateChart(names []string, rows []row, eps [][]epPoint) *Chart {
	c := &Chart{ID: "endpoint-rate", Title: "Rate by endpoint", XLabel: "second", YLabel: "req/s"}
	c.Series = endpointSeries(names, rows, eps, "", func(p *epPoint) float64 { return p.requests })
	return c
}

// endpointLatencyChart draws each endpoint's p99 as a solid line and its
// p50 dashed, in the endpoint's colour.
func endpointLatencyChart(names []string, rows []row, eps [][]epPoint) *Chart {
	c := &Chart{ID: "endpoint-latency", Title: "Latency by endpoint: p99 solid, p50 dashed (log scale)", XLabel: "second", YLabel: "ms", LogY: true}
	p99 := endpointSeries(names, rows, eps, " p99", func(p *epPoint) float64 { return p.p99 })
	p50 := endpointSeries(names, rows, eps, " p50", func(p *epPoint) float64 { return p.p50 })
	for j := range names {
		p50[j].Dashed = true
		c.Series = append(c.Series, p99[j], p50[j])
	}
	return c
}
