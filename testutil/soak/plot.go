package soak

import (
	"bytes"
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// ChartWidth and ChartHeight are the PNG's size (at vgimg's 96 dpi: 1152 × 1536 pixels).
const (
	ChartWidth  = 12 * vg.Inch
	ChartHeight = 16 * vg.Inch
)

// faultColors shade each kind of fault; kinds not listed are grey.
var faultColors = map[string]color.NRGBA{
	"kill":        {R: 230, G: 60, B: 60, A: 60},
	"pause":       {R: 60, G: 120, B: 230, A: 60},
	"partition":   {R: 240, G: 170, B: 40, A: 70},
	"restart-all": {R: 160, G: 80, B: 200, A: 60},
	"twin":        {R: 40, G: 170, B: 90, A: 70},
}

var nodeColors = []color.RGBA{{R: 31, G: 119, B: 180, A: 255}, {R: 255, G: 127, B: 14, A: 255}, {R: 44, G: 160, B: 44, A: 255}, {R: 214, G: 39, B: 40, A: 255}, {R: 148, G: 103, B: 189, A: 255}, {R: 140, G: 86, B: 75, A: 255}, {R: 227, G: 119, B: 194, A: 255}}

// series is one line of a panel.
type series struct {
	name  string
	color color.Color
	dash  bool
	xys   plotter.XYs
}

// PNG draws the report's four panels — records/s, p99 latency, RSS and disk per validator, per
// bin — with every fault interval shaded by kind and labelled in the first panel, and a fifth
// with the p99 latency and throughput per kind of fault (ByFault).
func (rep *Report) PNG(w, h vg.Length) ([]byte, error) {
	at := func(b Bin) float64 { return (b.StartSec + rep.BinSec/2) / 60 }
	var acked, eaten, target, p99 plotter.XYs
	rss := make([]plotter.XYs, rep.Validators)
	disk := make([]plotter.XYs, rep.Validators)
	for _, b := range rep.Bins {
		x := at(b)
		acked = append(acked, plotter.XY{X: x, Y: b.AckedPerSec})
		eaten = append(eaten, plotter.XY{X: x, Y: b.ConsumedPerSec})
		target = append(target, plotter.XY{X: x, Y: rep.TargetRate})
		if b.P99Ms >= 0 {
			p99 = append(p99, plotter.XY{X: x, Y: b.P99Ms / 1000})
		}
		for n := 0; n < rep.Validators; n++ {
			if n < len(b.RSSMiB) && b.RSSMiB[n] > 0 {
				rss[n] = append(rss[n], plotter.XY{X: x, Y: b.RSSMiB[n]})
			}
			if n < len(b.DiskMiB) && b.DiskMiB[n] > 0 {
				disk[n] = append(disk[n], plotter.XY{X: x, Y: b.DiskMiB[n]})
			}
		}
	}
	perNode := func(xys []plotter.XYs) []series {
		var out []series
		for n, s := range xys {
			out = append(out, series{name: fmt.Sprintf("node %d", n), color: nodeColors[n%len(nodeColors)], xys: s})
		}
		return out
	}
	panels := []struct {
		title, y string
		lines    []series
	}{
		{fmt.Sprintf("bftlog soak: %d validators, seed %d, target %.0f records/s — records/s per %s bin", rep.Validators, rep.Seed, rep.TargetRate, binLabel(rep.BinSec)), "records/s", []series{
			{name: "acknowledged (committed)", color: nodeColors[0], xys: acked},
			{name: "consumed by the group", color: nodeColors[1], xys: eaten},
			{name: "target", color: color.Gray{Y: 90}, dash: true, xys: target},
		}},
		{"p99 produce→commit latency", "seconds", []series{{name: "p99", color: nodeColors[3], xys: p99}}},
		{"resident set per validator (largest sample in the bin)", "RSS MiB", perNode(rss)},
		{"data directory per validator", "disk MiB", perNode(disk)},
	}
	xmax := rep.DurationSec / 60
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.Y.Label.Text = pn.y
		if i == len(panels)-1 {
			p.X.Label.Text = "minutes since start"
		}
		p.X.Min, p.X.Max = 0, xmax
		p.Add(plotter.NewGrid())
		ymax := 0.0
		for _, s := range pn.lines {
			for _, xy := range s.xys {
				ymax = max(ymax, xy.Y)
			}
		}
		if ymax == 0 {
			ymax = 1
		}
		// Headroom for the legend (and, in the first panel, the fault labels).
		ymax *= 1.35
		p.Y.Min, p.Y.Max = 0, ymax
		if err := shadeFaults(p, rep.Faults, xmax, ymax, i == 0); err != nil {
			return nil, err
		}
		for _, s := range pn.lines {
			if len(s.xys) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(s.xys)
			if err != nil {
				return nil, err
			}
			l.Color, pts.Color = s.color, s.color
			l.Width = vg.Points(1.5)
			pts.Radius = vg.Points(2)
			if s.dash {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				p.Add(l)
			} else {
				p.Add(l, pts)
			}
			p.Legend.Add(s.name, l)
		}
		p.Legend.Top = true
		p.Legend.Left = true
		plots[i] = []*plot.Plot{p}
	}
	byFault, err := rep.faultPanel()
	if err != nil {
		return nil, err
	}
	plots = append(plots, []*plot.Plot{byFault})
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// shadeFaults adds a rectangle per fault over the panel's height and, when label is set, the
// fault's kind and node at its start (staggered over three heights so neighbours stay apart)
// and one legend entry per kind.
func shadeFaults(p *plot.Plot, faults []Fault, xmax, ymax float64, label bool) error {
	minWidth := xmax / 300 // an instant fault still shows
	var labels plotter.XYLabels
	kinds := map[string]*plotter.Polygon{}
	for i, f := range faults {
		x0, x1 := f.StartSec/60, max(f.EndSec/60, f.StartSec/60+minWidth)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: ymax}, {X: x0, Y: ymax}})
		if err != nil {
			return err
		}
		c, ok := faultColors[f.Kind]
		if !ok {
			c = color.NRGBA{R: 128, G: 128, B: 128, A: 60}
		}
		poly.Color = c
		poly.LineStyle.Width = 0
		p.Add(poly)
		kinds[f.Kind] = poly
		text := f.Kind
		if f.Node >= 0 {
			text = fmt.Sprintf("%s n%d", f.Kind, f.Node)
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: x0, Y: ymax * (0.97 - 0.05*float64(i%3))})
		labels.Labels = append(labels.Labels, text)
	}
	if !label || len(faults) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(7)
		l.TextStyle[i].YAlign = draw.YTop
	}
	p.Add(l)
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p.Legend.Add("fault: "+k, kinds[k])
	}
	return nil
}

// binLabel names a bin length ("1 min", "15 s").
func binLabel(sec float64) string {
	if sec >= 60 && int(sec)%60 == 0 {
		return fmt.Sprintf("%d min", int(sec)/60)
	}
	return fmt.Sprintf("%g s", sec)
}

// faultPanel draws ByFault: a bar per kind of fault (the fault-free time first) as high as the
// p99 produce→commit latency of the records handed over during it, labelled with it and with
// the records acknowledged per second during it, also as a share of the fault-free rate.
func (rep *Report) faultPanel() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "per kind of fault, from its start until every node caught up: p99 produce→commit of the records handed over (bars), records acknowledged/s (labels)"
	p.Y.Label.Text = "p99 seconds"
	p.Add(plotter.NewGrid())
	var names []string
	var p99 plotter.Values
	var labels plotter.XYLabels
	ymax := 1.0
	for i, f := range rep.ByFault {
		name := f.Kind
		switch name {
		case NoFault:
			name = "no fault"
		case Recovery:
			name = fmt.Sprintf("%s after", RecoveryTail)
		case StartUp:
			name = "start-up"
		}
		names = append(names, fmt.Sprintf("%s (%d, %.0f s)", name, f.Faults, f.Sec))
		y := max(f.P99Ms, 0) / 1000
		p99 = append(p99, y)
		ymax = max(ymax, y)
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: y})
		label := fmt.Sprintf("p99 %.1f s (×%.1f)\n%.0f rec/s (%.0f%%)", y, f.P99Ratio, f.AckedPerSec, 100*f.ThroughputRatio)
		if f.Acked == 0 {
			label = "nothing acknowledged"
		}
		labels.Labels = append(labels.Labels, label)
	}
	if len(p99) == 0 {
		return p, nil
	}
	bars, err := plotter.NewBarChart(p99, vg.Points(40))
	if err != nil {
		return nil, err
	}
	bars.Color = nodeColors[3]
	bars.LineStyle.Width = 0
	p.Add(bars)
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(8)
		l.TextStyle[i].XAlign = draw.XCenter
		l.Offset.Y = vg.Points(3)
	}
	p.Add(l)
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, ymax*1.4
	return p, nil
}
