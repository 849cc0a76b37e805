package bench

import (
	"bytes"
	"fmt"
	"image/color"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var systemColors = []color.RGBA{{R: 31, G: 119, B: 180, A: 255}, {R: 255, G: 127, B: 14, A: 255}, {R: 44, G: 160, B: 44, A: 255},
	{R: 214, G: 39, B: 40, A: 255}, {R: 148, G: 103, B: 189, A: 255}, {R: 140, G: 86, B: 75, A: 255}, {R: 227, G: 119, B: 194, A: 255},
	{R: 127, G: 127, B: 127, A: 255}, {R: 188, G: 189, B: 34, A: 255}}

// chartName is how a result is called in the chart's legend.
func chartName(x Result) string {
	if x.Validators > 0 && strings.HasPrefix(x.System, "bftlog") {
		return fmt.Sprintf("%s N=%d", x.System, x.Validators)
	}
	return x.System
}

// PNG draws the latency–throughput curves of every swept system: p99 (top) and p50 (bottom)
// against the committed rate, one line per system, the capacity bound dashed. A step's
// latency above the top of the chart is drawn at the top.
func (r *Report) PNG() ([]byte, error) {
	var swept []Result
	for _, x := range r.Results {
		if len(x.Sweep) > 0 {
			swept = append(swept, x)
		}
	}
	if len(swept) == 0 {
		return nil, nil
	}
	top := 1.5 * r.Config.SweepStopP99.Seconds()
	var plots [][]*plot.Plot
	for _, panel := range []struct {
		title string
		of    func(SweepPoint) float64
	}{
		{fmt.Sprintf("p99 latency against committed records/s (%s per step; capacity: p99 ≤ %s)", r.Config.SweepStep, r.Config.CapacityP99), func(p SweepPoint) float64 { return p.P99Ms }},
		{"p50 latency against committed records/s", func(p SweepPoint) float64 { return p.P50Ms }},
	} {
		p := plot.New()
		p.Title.Text = panel.title
		p.X.Label.Text = "committed records/s (thousands)"
		p.Y.Label.Text = "seconds"
		p.Y.Min, p.Y.Max, p.X.Min = 0, top, 0
		p.Add(plotter.NewGrid())
		xmax := 0.0
		for i, x := range swept {
			var xys plotter.XYs
			for _, pt := range x.Sweep {
				xys = append(xys, plotter.XY{X: pt.CommittedPerSec / 1000, Y: min(panel.of(pt)/1000, top)})
				xmax = max(xmax, pt.CommittedPerSec/1000)
			}
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			c := systemColors[i%len(systemColors)]
			l.Color, pts.Color, l.Width, pts.Radius = c, c, vg.Points(1.5), vg.Points(2.5)
			p.Add(l, pts)
			name := chartName(x)
			if x.RecordsPerSec > 0 {
				name += fmt.Sprintf(" — capacity %.0fk/s", x.RecordsPerSec/1000)
			}
			p.Legend.Add(name, l, pts)
		}
		bound, err := plotter.NewLine(plotter.XYs{{X: 0, Y: r.Config.CapacityP99.Seconds()}, {X: xmax * 1.05, Y: r.Config.CapacityP99.Seconds()}})
		if err != nil {
			return nil, err
		}
		bound.Color, bound.Dashes = color.Gray{Y: 90}, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(bound)
		p.Legend.Top, p.Legend.Left = true, true
		plots = append(plots, []*plot.Plot{p})
	}
	img := vgimg.New(11*vg.Inch, 12*vg.Inch)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, draw.New(img))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WritePNG stores the chart beside the report's JSON file (same name, .png); no swept
// system, no file.
func (r *Report) WritePNG(jsonName string) (string, error) {
	png, err := r.PNG()
	if err != nil || png == nil {
		return "", err
	}
	name := strings.TrimSuffix(jsonName, ".json") + ".png"
	return name, os.WriteFile(name, png, 0o644)
}
