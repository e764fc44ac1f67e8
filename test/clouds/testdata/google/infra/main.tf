# A small GKE-less cluster on Compute Engine: three instances in two zones,
# one of them stopped.
terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0.0"
    }
  }
}

resource "google_compute_instance" "node" {
  for_each = { "node-a" = "europe-west1-b", "node-b" = "europe-west1-c", "node-c" = "europe-west1-c" }

  project        = "shop-prod"
  name           = each.key
  zone           = each.value
  machine_type   = "e2-standard-4"
  can_ip_forward = true
  desired_status = each.key == "node-c" ? "TERMINATED" : "RUNNING"

  boot_disk {
    initialize_params {
      image = "debian-cloud/debian-13"
    }
  }

  network_interface {
    subnetwork = "nodes"
    access_config {}
  }
}
