package kit

import (
	"net/http"

	"github.com/attune/attune/internal/attune"
)

// ProjectAccess loads the project of the path ({id}) for the signed-in
// user, with the user's standing in it. Someone who is not a member gets
// not found, the same as for a project that does not exist; with manage,
// a member who does not lead it gets forbidden. Every project page checks
// here, at the moment it acts.
func (k *Kit) ProjectAccess(r *http.Request, manage bool) (*attune.Project, attune.MemberRole, error) {
	ctx := r.Context()
	id, err := PathInt(r, "id")
	if err != nil {
		return nil, "", err
	}
	role, err := k.DB.ProjectRole(ctx, id, UserFrom(ctx))
	if err != nil {
		return nil, "", err
	}
	if manage && role != attune.MemberLead {
		return nil, role, attune.Forbidden("Only a lead of this project can change it.")
	}
	p, err := k.DB.FindProjectByID(ctx, id)
	if err != nil {
		return nil, "", err
	}
	return p, role, nil
}

// APILeadProject is APIProjectAccess for a route only the project's leads
// may use: doing says what, in the refusal ("manage its members").
func (k *Kit) APILeadProject(r *http.Request, u *attune.User, doing string) (*attune.Project, error) {
	p, role, err := k.APIProjectAccess(r.Context(), r, u)
	if err != nil {
		return nil, err
	}
	if role != attune.MemberLead {
		return nil, attune.Forbidden("only the project's leads " + doing)
	}
	return p, nil
}

// ToProjectPage answers a GET of an import's address (where a refused
// import was shown) with a redirect to the page holding its form, at
// where (a fragment, or a path under the project and a fragment), once
// the viewer is found to lead the project.
func (k *Kit) ToProjectPage(where string) Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, _, err := k.ProjectAccess(r, true)
		if err != nil {
			return err
		}
		http.Redirect(w, r, ProjectPath(p.ID)+where, http.StatusSeeOther)
		return nil
	}
}
