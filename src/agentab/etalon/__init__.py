"""The etalon: the pinned tag of the repository measured, cloned fresh for every run.

`repository` holds the mirror, each tag's pristine checkout, a fresh clone of it and a checkout
of etalon + patch; `tree` asks git about a checkout once hostile code has touched it, through a
git directory agentab owns (the patch, the files it touches, what setup made); `protect` gives
a validator's checkout back the paths that belong to the measurement. A run's outcome is always
etalon + `result.patch`.
"""

from agentab.etalon.protect import (
    DEFAULT_PROTECT,
    RUNNER_FILES,
    Restored,
    effective_protect,
    is_protected,
    protected_files,
)
from agentab.etalon.repository import (
    GIT_IDENTITY,
    PRISTINE_CHECKOUTS,
    TOOLING_FILES,
    EtalonFault,
    EtalonProblem,
    checkout_with_patch,
    control,
    ensure_mirror,
    etalon_problem,
    exclude_from_git,
    fresh_clone,
    git,
    git_env,
    is_url,
    list_refs,
    mirror_path,
    pristine_checkout,
    repository_name,
    tag_sha,
    verify_tree,
)
from agentab.etalon.tree import PatchResult, TreeGit, patch_files

__all__ = [
    "DEFAULT_PROTECT",
    "RUNNER_FILES",
    "effective_protect",
    "GIT_IDENTITY",
    "PRISTINE_CHECKOUTS",
    "TOOLING_FILES",
    "EtalonFault",
    "EtalonProblem",
    "PatchResult",
    "Restored",
    "TreeGit",
    "checkout_with_patch",
    "control",
    "ensure_mirror",
    "etalon_problem",
    "exclude_from_git",
    "fresh_clone",
    "git",
    "git_env",
    "is_protected",
    "is_url",
    "list_refs",
    "mirror_path",
    "patch_files",
    "pristine_checkout",
    "protected_files",
    "repository_name",
    "tag_sha",
    "verify_tree",
]
