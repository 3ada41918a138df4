package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestDemotedLeadLosesProjectRights: a project role of lead counts only
// while the account's global role is lead or admin, checked as each
// request acts, so a demotion takes effect at the next request.
func TestDemotedLeadLosesProjectRights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	admin := a.user("admin@example.org", attune.RoleAdmin)
	lee := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lee, projectOpts{})
	l := a.client()
	l.mustSignIn(lee)
	edit := url.Values{"name": {"Renamed"}, "overlap": {"2"}, "lease": {"30"}}
	wantStatus(t, l.get(projectPath(p, "/edit")), http.StatusOK)

	ad := a.client()
	ad.mustSignIn(admin)
	wantStatus(t, ad.post(fmt.Sprintf("/admin/users/%d/role", lee.ID), url.Values{"role": {"annotator"}}), http.StatusSeeOther)
	wantContains(t, ad.get("/admin/users"), "Role changed to annotator.", "no longer leads the one project it led")

	// Lee's open session acts as an annotator of the project from now on.
	wantStatus(t, l.get(projectPath(p, "/edit")), http.StatusForbidden)
	wantStatus(t, l.post(projectPath(p, "/edit"), edit), http.StatusForbidden)
	wantStatus(t, l.post(projectPath(p, "/members"), url.Values{"email": {admin.Email}, "role": {"annotator"}}), http.StatusForbidden)
	page := l.get(projectPath(p, ""))
	wantStatus(t, page, http.StatusOK)
	got, err := a.db.FindProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != p.Name {
		t.Fatalf("a demoted lead renamed the project to %q", got.Name)
	}

	// A lead membership stored for an account that is not a lead (from
	// before this rule, or written behind the app's back) grants nothing.
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	if _, err := a.db.Pool().Exec(ctx, `INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'lead')`, p.ID, ann.ID); err != nil {
		t.Fatal(err)
	}
	c := a.client()
	c.mustSignIn(ann)
	wantStatus(t, c.post(projectPath(p, "/edit"), edit), http.StatusForbidden)
	wantStatus(t, c.post(projectPath(p, "/status"), url.Values{"status": {"archived"}}), http.StatusForbidden)
	if role, err := a.db.ProjectRole(ctx, p.ID, ann); err != nil || role != attune.MemberAnnotator {
		t.Fatalf("stored lead with the global role annotator: role %q, %v; want annotator", role, err)
	}
	home := c.get("/")
	wantStatus(t, home, http.StatusOK)
	wantContains(t, home, "you are annotator")
	wantLacks(t, home, "you are lead")
}

// TestOnlyLeadsBecomeProjectLeads: a project lead can add anyone as an
// annotator, but only accounts whose global role is lead or admin as leads.
func TestOnlyLeadsBecomeProjectLeads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newApp(t)
	lee := a.user("lee@example.org", attune.RoleLead)
	ann := a.user("ann@example.org", attune.RoleAnnotator)
	kim := a.user("kim@example.org", attune.RoleLead)
	p := a.project(lee, projectOpts{})
	l := a.client()
	l.mustSignIn(lee)

	r := l.post(projectPath(p, "/members"), url.Values{"email": {ann.Email}, "role": {"lead"}})
	wantStatus(t, r, http.StatusConflict)
	wantContains(t, r, "ann@example.org is an annotator: only accounts whose role is lead or admin can lead a project")
	if _, err := a.db.ProjectRole(ctx, p.ID, ann); err == nil {
		t.Fatal("the refused account was added to the project")
	}
	// The same rule holds from the command line's path, the store.
	if err := a.db.AddMember(ctx, nil, p.ID, ann.ID, attune.MemberLead); err == nil || !strings.Contains(attune.PublicMessage(err), "only accounts whose role is lead or admin") {
		t.Fatalf("store added an annotator as a project lead: %v", err)
	}
	wantStatus(t, l.post(projectPath(p, "/members"), url.Values{"email": {ann.Email}, "role": {"annotator"}}), http.StatusSeeOther)
	wantStatus(t, l.post(projectPath(p, "/members"), url.Values{"email": {kim.Email}, "role": {"lead"}}), http.StatusSeeOther)
	if role, err := a.db.ProjectRole(ctx, p.ID, kim); err != nil || role != attune.MemberLead {
		t.Fatalf("kim's role %q, %v; want lead", role, err)
	}
}
