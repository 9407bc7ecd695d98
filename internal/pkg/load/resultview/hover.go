package resultview

import _ "embed"

// hoverJS shows a chart's values under the pointer: the second (or
// percentile) nearest to it and each series' value there, read from the
// chart's data-x and each series' data-v, with a dashed cursor line. It
// writes text only (textContent), and listens once on the document, so
// the live dashboard's updates, which replace the charts, need nothing of
// their own. It is the page's one script besides the live dashboard's; it
// is written as it is and holds nothing from the run. It has no comments:
// html/template, which the tests compare the page with, drops them.
//
//go:embed hover.js
var hoverJS string

// hoverScript is hoverJS as the page carries it.
var hoverScript = "<script>\n" + hoverJS + "</script>\n"
