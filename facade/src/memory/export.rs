//! Parquet export of a [`Memory`]: the log's records and a profile's views.

use std::collections::BTreeMap;
use std::path::Path;

use strataflow_interchange::export::{ExportManifest, ExportOptions, TenantViews};
use strataflow_materializers::view::WeightsState;

use super::{Memory, MemoryError};

impl Memory {
    /// Exports the records (as [`strataflow_interchange::export::export_parquet`])
    /// and the views of `profile` (`None`: the default) for the tenant of
    /// `options` or every tenant, each view refreshed to the end of the log.
    pub fn export_parquet(
        &self,
        dir: &Path,
        options: &ExportOptions,
        profile: Option<&str>,
    ) -> Result<ExportManifest, MemoryError> {
        let (profile, _) = self.operators(profile)?;
        let name = Some(profile.name.as_str());
        let tenants = match &options.tenant {
            Some(t) => vec![t.clone()],
            None => self.tenants()?,
        };
        // One scan brings every tenant's views up to date; the reads
        // below then have nothing left to scan.
        let mut digests_of: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for r in self.tenants_views(name, &tenants, false)? {
            digests_of
                .entry(r.tenant)
                .or_default()
                .insert(r.view.to_owned(), r.digest);
        }
        let mut views = Vec::new();
        for tenant in tenants {
            // default: A tenant with no reported view exports no digests.
            let digests = digests_of.remove(&tenant).unwrap_or_default();
            let status = self.event_status(&tenant)?;
            let (weights, _) = self.refresh::<WeightsState>(&tenant)?;
            let (key, fresh) = self.block_levels_key(name)?;
            let (levels, _) = self.refresh_keyed(&key, &tenant, fresh)?;
            views.push(TenantViews {
                weights: weights.view(&status),
                levels: levels
                    .inputs
                    .keys()
                    .map(|thread| (thread.clone(), levels.thread(thread)))
                    .collect(),
                graph: self.graph_with(name, &tenant, &status)?,
                status,
                digests,
                tenant,
            });
        }
        strataflow_interchange::export::export_parquet_with_views(
            &self.store,
            dir,
            options,
            &profile.name,
            &views,
            self.store.config(super::keyed::EMBEDDER_CONFIG)?.as_deref(),
        )
        .map_err(|e| MemoryError::Export(Box::new(e)))
    }
}
