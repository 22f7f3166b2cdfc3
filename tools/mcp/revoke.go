package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// maxIssuerCandidates bounds the issuers tried for a grant without a recorded one.
const maxIssuerCandidates = 4

// revokeGrant asks the authorization server that issued g to revoke its tokens (RFC 7009): the
// refresh token, then the access token. It finds the revocation endpoint in the server's
// metadata (RFC 8414), by the issuer recorded at login or else the token endpoint's origin and
// parent paths. found is false when the metadata lists no revocation endpoint (nothing to do);
// err says why a revocation that was possible did not succeed.
func revokeGrant(ctx context.Context, hc *http.Client, g *Grant) (found bool, err error) {
	endpoint, err := revocationEndpoint(ctx, hc, g)
	if err != nil || endpoint == "" {
		return false, err
	}
	var errs []error
	for _, tok := range []struct{ value, hint string }{{g.RefreshToken, "refresh_token"}, {g.AccessToken, "access_token"}} {
		if tok.value != "" {
			errs = append(errs, revokeToken(ctx, hc, endpoint, g, tok.value, tok.hint))
		}
	}
	return true, errors.Join(errs...)
}

// revocationEndpoint is the revocation_endpoint of g's authorization server's metadata, or "".
func revocationEndpoint(ctx context.Context, hc *http.Client, g *Grant) (string, error) {
	var lastErr error
	for _, iss := range issuerCandidates(g) {
		asm, err := auth.GetAuthServerMetadata(ctx, iss, hc)
		if err != nil {
			lastErr = err
			continue
		}
		if asm != nil {
			return asm.RevocationEndpoint, nil
		}
	}
	return "", lastErr
}

// issuerCandidates are the issuer the login recorded, else the token endpoint's URL with its
// path cut back one segment at a time (https://as/oauth/token → https://as/oauth, https://as).
func issuerCandidates(g *Grant) []string {
	if g.Issuer != "" {
		return []string{g.Issuer}
	}
	u, err := url.Parse(g.TokenURL)
	if err != nil || u.Host == "" {
		return nil
	}
	u.RawQuery, u.Fragment = "", ""
	var out []string
	p := strings.TrimRight(u.Path, "/")
	for len(out) < maxIssuerCandidates {
		i := strings.LastIndex(p, "/")
		if i < 0 {
			break
		}
		p = p[:i]
		u.Path = p
		out = append(out, u.String())
	}
	return out
}

// revokeToken posts one token to the revocation endpoint, authenticated as the client the
// token was issued to.
func revokeToken(ctx context.Context, hc *http.Client, endpoint string, g *Grant, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	basic := g.ClientSecret != "" && oauth2.AuthStyle(g.AuthStyle) != oauth2.AuthStyleInParams
	if !basic {
		form.Set("client_id", g.ClientID)
		if g.ClientSecret != "" {
			form.Set("client_secret", g.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("revoke the %s: %w", hint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(g.ClientID), url.QueryEscape(g.ClientSecret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("revoke the %s at %s: %w", hint, endpoint, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke the %s at %s: HTTP %d %s", hint, endpoint, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
