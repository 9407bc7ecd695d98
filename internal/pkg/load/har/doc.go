// Package har turns an HTTP Archive (a browser's recorded session) into
// load-test requests, as Crankfire's har_file does: one request per
// recorded entry, filtered by host and method, without static assets
// (scripts, styles, images, fonts), and without the headers that must not
// be replayed: hop-by-hop headers, HTTP/2 pseudo-headers, and credentials
// (Authorization, Cookie and friends), which a recording would otherwise
// replay from someone's browser.
package har
