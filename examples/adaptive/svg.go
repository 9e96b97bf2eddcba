package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// series is one line of a panel: a name, a colour and one y per x.
type series struct {
	name, colour string
	ys           []float64
}

// panel is one chart of the SVG: a title, a y unit and its lines, drawn
// against the shared x values (seconds).
type panel struct {
	title, unit string
	lines       []series
}

const (
	svgW, panelH  = 960, 220
	padL, padR    = 70, 170
	padT, padB    = 30, 30
	plotW, plotH  = svgW - padL - padR, panelH - padT - padB
	gridLinesEach = 4
)

// writeSVG draws the panels one above the other over xs (seconds), with
// axes, a light grid, a legend per panel and dashed lines at marks (the
// seconds where the offered load changes, labelled).
func writeSVG(w io.Writer, title string, xs []float64, panels []panel, marks map[float64]string) error {
	var b strings.Builder
	h := len(panels)*panelH + 40
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", svgW, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", padL, esc(title))
	xmax := xs[len(xs)-1]
	for i, p := range panels {
		top := 40 + i*panelH
		ymax := 0.0
		for _, s := range p.lines {
			for _, y := range s.ys {
				if !math.IsNaN(y) {
					ymax = max(ymax, y)
				}
			}
		}
		ymax = niceCeil(ymax)
		px := func(x float64) float64 { return padL + x/xmax*plotW }
		py := func(y float64) float64 { return float64(top+padT) + plotH - y/ymax*plotH }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", padL, top+padT-8, esc(p.title))
		for g := 0; g <= gridLinesEach; g++ {
			y := ymax * float64(g) / gridLinesEach
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
				padL, padL+plotW, py(y), py(y), padL-6, py(y)+4, esc(fmtTick(y, p.unit)))
		}
		for x, label := range marks {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999" stroke-dasharray="4 3"/>`, px(x), px(x), top+padT, top+padT+plotH)
			if i == 0 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#555">%s</text>`, px(x)+3, top+padT+12, esc(label))
			}
			b.WriteByte('\n')
		}
		for t := 0.0; t <= xmax; t += 5 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gs</text>`, px(t), top+padT+plotH+16, t)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", padL, top+padT, plotW, plotH)
		for k, s := range p.lines {
			var pts strings.Builder
			for j, y := range s.ys {
				if !math.IsNaN(y) {
					fmt.Fprintf(&pts, "%.1f,%.1f ", px(xs[j]), py(y))
				}
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", s.colour, pts.String())
			ly := top + padT + 14 + k*18
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d">%s</text>`+"\n",
				padL+plotW+12, padL+plotW+32, ly-4, ly-4, s.colour, padL+plotW+38, ly, esc(s.name))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtTick(v float64, unit string) string {
	switch unit {
	case "ms":
		return fmt.Sprintf("%gms", math.Round(v*10)/10)
	case "%":
		return fmt.Sprintf("%g%%", math.Round(v))
	}
	return fmt.Sprintf("%g", math.Round(v*10)/10)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
