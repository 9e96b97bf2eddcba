package browsertest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Page is one browser tab, attached over its own CDP session.
type Page struct {
	b       *Browser
	session string
}

// callTimeout bounds each DevTools command.
const callTimeout = 30 * time.Second

// NewPage opens a blank tab with the Runtime, Log and Page domains on, so
// console messages, exceptions and log entries are recorded from the start.
func (b *Browser) NewPage() (*Page, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var tgt struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &tgt); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": tgt.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: att.SessionID}
	for _, domain := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		if err := p.Call(domain, map[string]any{}, nil); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Call sends a CDP command to the page.
func (p *Page) Call(method string, params, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return p.b.call(ctx, p.session, method, params, out)
}

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(url string) error {
	var res struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.Call("Page.navigate", map[string]any{"url": url}, &res); err != nil {
		return err
	}
	if res.ErrorText != "" {
		return fmt.Errorf("navigating to %s: %s", url, res.ErrorText)
	}
	return p.WaitFor(`document.readyState === "complete"`, 30*time.Second)
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into out.
func (p *Page) Eval(expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	params := map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}
	if err := p.Call("Runtime.evaluate", params, &res); err != nil {
		return err
	}
	if res.Exception != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, res.Exception.Text, res.Exception.Exception.Description)
	}
	if out == nil || len(res.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

// WaitFor polls the boolean expression every 50ms until it is true. It
// waits for the browser (rendering, the page's own timers), never for the
// code under test.
func (p *Page) WaitFor(expr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		var ok bool
		if last = p.Eval(expr, &ok); last == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("%w: %s: %v", ErrTimeout, expr, last)
			}
			return fmt.Errorf("%w: %s", ErrTimeout, expr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Screenshot returns a PNG of the page as shown.
func (p *Page) Screenshot() ([]byte, error) {
	var res struct {
		Data string `json:"data"`
	}
	if err := p.Call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &res); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(res.Data)
}

// ConsoleErrors lists what the page reported as errors: console.error
// calls, uncaught exceptions, and error log entries (failed loads,
// Content-Security-Policy violations).
func (p *Page) ConsoleErrors() []string {
	var out []string
	for _, e := range p.b.Events(p.session) {
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var v struct {
				Type string `json:"type"`
				Args []struct {
					Value       any    `json:"value"`
					Description string `json:"description"`
				} `json:"args"`
			}
			if json.Unmarshal(e.Params, &v) == nil && (v.Type == "error" || v.Type == "assert") {
				var parts []string
				for _, a := range v.Args {
					parts = append(parts, fmt.Sprint(a.Value)+a.Description)
				}
				out = append(out, "console."+v.Type+": "+strings.Join(parts, " "))
			}
		case "Runtime.exceptionThrown":
			var v struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			_ = json.Unmarshal(e.Params, &v)
			out = append(out, "exception: "+v.Details.Text+" "+v.Details.Exception.Description)
		case "Log.entryAdded":
			var v struct {
				Entry struct {
					Level, Text, URL string
				} `json:"entry"`
			}
			if json.Unmarshal(e.Params, &v) == nil && v.Entry.Level == "error" {
				out = append(out, "log: "+v.Entry.Text+" "+v.Entry.URL)
			}
		}
	}
	return out
}
