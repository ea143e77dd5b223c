"""Gang features, each pure: gang scheduling (Workloads, PodGroups, CompositePodGroups and
their trees), placement, the failure policy, DRA claims, Kueue, scaling groups and
autoscaling, in-place updates, the gangs' DNS layout, start gates and pod back-off. A
feature imports the base (`controllers.base`) and other features, never a controller
package."""
